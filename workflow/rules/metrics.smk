# Seeds 000 and 004: per-rank observables, speed-up/efficiency, stragglers and POP metrics for every
# study that varies p; and the reproduction of the MDAnalysis RMSD scaling study (target: paper_mdanalysis).

localrules:
    metrics,
    paper_mdanalysis,


rule metrics:
    input:
        runs=rules.collect.output.runs,
        ranks=rules.collect.output.ranks,
        regions=rules.collect.output.regions,
    output:
        observables=stage_output("metrics", "observables"),
        scaling=stage_output("metrics", "scaling"),
        pop_csv=stage_output("metrics", "pop_csv"),
        pop_spread=stage_output("metrics", "pop_spread"),
        pop_figure=report(stage_output("metrics", "pop_figure"), caption="../report/pop.rst", category="{study}",
                          subcategory="efficiency"),
        speedup_figure=report(stage_output("metrics", "speedup_figure"), caption="../report/speedup.rst",
                              category="{study}", subcategory="scaling"),
        ranks_figure=report(stage_output("metrics", "ranks_figure"), caption="../report/ranks.rst",
                            category="{study}", subcategory="efficiency"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        processes=SWEEP.processes,
        scaling_mode=lambda wc: STUDIES[wc.study].scaling,
    log:
        stage_log("metrics"),
    conda:
        ENV
    script:
        "../../scripts/metrics.py"


rule paper_mdanalysis:
    input:
        data_dir=get_paper_input("mdanalysis_dir", "mdanalysis-rmsd"),
    output:
        **stage_outputs("paper_mdanalysis"),
    log:
        stage_log("paper_mdanalysis"),
    conda:
        ENV
    script:
        "../../scripts/paper_mdanalysis.py"
