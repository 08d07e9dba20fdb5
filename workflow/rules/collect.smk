localrules:
    collect,
    variability,
    aggregate,


rule collect:
    input:
        get_run_inputs,  # the records, or with bundles their manifests; params.records are read
    output:
        runs=f"{R}/tables/{{study}}/runs.csv",
        ranks=f"{R}/tables/{{study}}/ranks.csv",
        regions=f"{R}/tables/{{study}}/regions.csv",
    log:
        f"{R}/logs/collect/{{study}}.log",
    params:
        records=get_run_records,
        validation=lambda wc: [c.config_id for c in STUDIES[wc.study].validation],
    conda:
        ENV
    script:
        "../../scripts/collect.py"


rule variability:
    input:
        runs=rules.collect.output.runs,
    output:
        table=f"{R}/tables/{{study}}/variability.csv",
        summary=f"{R}/tables/{{study}}/variability_summary.csv",
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        cv_threshold=SWEEP.cv_threshold,
    log:
        f"{R}/logs/variability/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/variability.py"


rule aggregate:
    input:
        runs=rules.collect.output.runs,
        ranks=rules.collect.output.ranks,
        regions=rules.collect.output.regions,
        variability=rules.variability.output.table,
    output:
        aggregate=f"{R}/tables/{{study}}/aggregate.csv",
        medians=f"{R}/tables/{{study}}/medians.csv",
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        policy=SWEEP.cv_policy,
        records=lambda wc: f"{R}/runs/{wc.study}",
        processes=SWEEP.processes,
    log:
        f"{R}/logs/aggregate/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/aggregate.py"
