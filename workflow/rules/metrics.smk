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
        observables=f"{R}/metrics/{{study}}/observables.csv",
        scaling=f"{R}/metrics/{{study}}/scaling.csv",
        pop_csv=f"{R}/metrics/{{study}}/pop.csv",
        pop_spread=f"{R}/metrics/{{study}}/pop_spread.csv",
        pop_figure=report(f"{R}/metrics/{{study}}/pop.png", caption="../report/pop.rst", category="{study}",
                          subcategory="efficiency"),
        speedup_figure=report(f"{R}/metrics/{{study}}/speedup_efficiency.png", caption="../report/speedup.rst",
                              category="{study}", subcategory="scaling"),
        ranks_figure=report(f"{R}/metrics/{{study}}/ranks.png", caption="../report/ranks.rst",
                            category="{study}", subcategory="efficiency"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
        processes=SWEEP.processes,
        scaling_mode=lambda wc: STUDIES[wc.study].scaling,
    log:
        f"{R}/logs/metrics/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/metrics.py"


rule paper_mdanalysis:
    input:
        data_dir=get_paper_input("mdanalysis_dir", "mdanalysis-rmsd"),
    output:
        scaling=f"{R}/paper/mdanalysis-rmsd/scaling.csv",
        figure=f"{R}/paper/mdanalysis-rmsd/speedup_efficiency.png",
        components=f"{R}/paper/mdanalysis-rmsd/components.png",
    log:
        f"{R}/logs/paper_mdanalysis.log",
    conda:
        ENV
    script:
        "../../scripts/paper_mdanalysis.py"
