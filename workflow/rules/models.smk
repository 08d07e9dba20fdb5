# Seed 001 §3.3: one PMNF model per (study, region, metric), fitted to every repetition (the aggregate's
# values column), with resampled repetitions for the lead-term share and prediction intervals.

localrules:
    models,
    models_summary,


rule models:
    input:
        aggregate=rules.aggregate.output.aggregate,
    output:
        **stage_outputs("models"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        fixed=lambda wc: {k: v for k, v in STUDIES[wc.study].fixed.items()},
        processes=SWEEP.processes,
        design=lambda wc: STUDIES[wc.study].design.kind,  # sparse, adaptive: one lower-order term
        modeling=SWEEP.extra["modeling"],  # log_factors, powers_only, simplest_within
        # measuring until decided (config decide:): the table says how it ended, from the rounds' state
        decide=lambda wc: dataclasses.asdict(STUDIES[wc.study].decide) if STUDIES[wc.study].decide else None,
        decide_state=lambda wc: str(layout.plan_file(R, wc.study, layout.DECIDE_FILE)),
    log:
        stage_log("models"),
    conda:
        ENV
    script:
        "../../scripts/models.py"


rule models_summary:
    input:
        models=lambda wc: [stage_output("models", "table", s) for s in STUDIES],
    output:
        **stage_outputs("models_summary"),
    log:
        stage_log("models_summary"),
    conda:
        ENV
    script:
        "../../scripts/models_summary.py"
