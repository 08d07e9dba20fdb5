# Figures per study (seed 001 Figs. 4, 6, 7 and Table 1 as a figure), each with its data as CSV beside
# it, marked for the HTML report (snakemake --report results/report.html).

localrules:
    figures,


rule figures:
    input:
        runs=rules.collect.output.runs,
        medians=rules.aggregate.output.medians,
        variability=rules.variability.output.table,
        predictions=rules.models.output.predictions,
        models_json=rules.models.output.models_json,
    output:
        time_vs_parameters=report(
            f"{R}/figures/{{study}}/time_vs_parameters.png",
            caption="../report/time_vs_parameters.rst",
            category="{study}",
            subcategory="measurements",
        ),
        grid=report(f"{R}/figures/{{study}}/grid.png", caption="../report/grid.rst", category="{study}",
                    subcategory="measurements"),
        variability_figure=report(f"{R}/figures/{{study}}/variability.png", caption="../report/variability.rst",
                                  category="{study}", subcategory="variability"),
        model=report(f"{R}/figures/{{study}}/model.png", caption="../report/model.rst", category="{study}",
                     subcategory="models"),
        model_vs_measurement=report(f"{R}/figures/{{study}}/model_vs_measurement.png",
                                    caption="../report/model_vs_measurement.rst", category="{study}",
                                    subcategory="models"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
    log:
        f"{R}/logs/figures/{{study}}.log",
    conda:
        ENV
    script:
        "../../scripts/figures.py"
