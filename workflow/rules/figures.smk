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
            stage_output("figures", "time_vs_parameters"),
            caption="../report/time_vs_parameters.rst",
            category="{study}",
            subcategory="measurements",
        ),
        grid=report(stage_output("figures", "grid"), caption="../report/grid.rst", category="{study}",
                    subcategory="measurements"),
        variability_figure=report(stage_output("figures", "variability_figure"), caption="../report/variability.rst",
                                  category="{study}", subcategory="variability"),
        model=report(stage_output("figures", "model"), caption="../report/model.rst", category="{study}",
                     subcategory="models"),
        model_vs_measurement=report(stage_output("figures", "model_vs_measurement"),
                                    caption="../report/model_vs_measurement.rst", category="{study}",
                                    subcategory="models"),
    params:
        varied=lambda wc: STUDIES[wc.study].varied,
    log:
        stage_log("figures"),
    conda:
        ENV
    script:
        "../../scripts/figures.py"
