# Seed 001 §3.3: one PMNF model per (study, region, metric), fitted to every repetition (the aggregate's
# values column), with resampled repetitions for the lead-term share and prediction intervals.

localrules:
    models,
    models_summary,


rule models:
    input:
        aggregate=rules.aggregate.output.aggregate,
    output:
        table=f"{R}/models/{{study}}/models.csv",
        models_json=f"{R}/models/{{study}}/models.json",
        predictions=f"{R}/models/{{study}}/predictions.csv",
        validation=f"{R}/models/{{study}}/validation.csv",
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        fixed=lambda wc: {k: v for k, v in STUDIES[wc.study].fixed.items()},
        processes=SWEEP.processes,
        design=lambda wc: STUDIES[wc.study].design.kind,  # sparse, adaptive: one lower-order term
        modeling=SWEEP.extra["modeling"],  # log_factors, powers_only
    log:
        f"{R}/logs/models/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/models.py"


rule models_summary:
    input:
        models=lambda wc: [f"{R}/models/{s}/models.csv" for s in STUDIES],
    output:
        summary=f"{R}/tables/models_summary.csv",
    log:
        f"{R}/logs/models_summary.log",
    conda:
        ENV
    script:
        "../../scripts/models_summary.py"
