localrules:
    collect,
    variability,
    aggregate,


rule collect:
    input:
        get_run_inputs,  # the records, or with bundles their manifests; params.records are read
    output:
        **stage_outputs("collect"),
    log:
        stage_log("collect"),
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
        **stage_outputs("variability"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        cv_threshold=SWEEP.cv_threshold,
        disturbed=SWEEP.disturbed,  # others' busy share that flags a run (variability.disturbed)
        remeasured=lambda wc: STUDIES[wc.study].decide is not None,  # measured until decided: disturbed measured again
    log:
        stage_log("variability"),
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
        **stage_outputs("aggregate"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        policy=SWEEP.cv_policy,
        records=lambda wc: str(layout.runs_dir(R, wc.study)),
        processes=SWEEP.processes,
        disturbed=SWEEP.disturbed,
        kinds=lambda wc: metric_kinds.declared(STUDIES[wc.study].app),  # units, which way is better
    log:
        stage_log("aggregate"),
    conda:
        ENV
    script:
        "../../scripts/aggregate.py"
