localrules:
    plot_sweep,


rule plot_sweep:
    input:
        runs=rules.collect.output.runs,
        medians=rules.aggregate.output.medians,
    output:
        figure=f"{R}/figures/{{study}}/time_vs_parameters.png",
        data=f"{R}/figures/{{study}}/time_vs_parameters.csv",
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
    log:
        f"{R}/logs/plot_sweep/{{study}}.log",
    script:
        "../../scripts/plot_sweep.py"
