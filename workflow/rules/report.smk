# The HTML report's extra content (snakemake --report results/report.html): one sheet per study with
# every fitted model (every region and metric, not only the run time) and the study's tables as HTML
# pages, since the report embeds HTML but offers a CSV only as a download. Grouped like the figures of
# figures.smk, metrics.smk and overhead.smk: category = study, subcategory = kind.
# Each model's full-size figures are written to figures/<study>/models/ and carried by a zip report
# (snakemake --report report.zip); the HTML report shows the sheet, so that it stays small enough to send.
# Only a zip report asks for them (they were half the post-processing's CPU time, bench/postprocessing.py):
# `snakemake --cores 2 --report report.zip --report-after-run` draws what is missing, then writes the zip.
# Needs from common.smk: R, STUDIES, ZIP_REPORT; from collect/models/metrics/overhead.smk
# their rules. What `all` asks of this file: get_all_report_outputs in common.smk.

localrules:
    failures_page,
    model_sheet,
    model_figures,
    report_pages,
    report_pages_scaling,
    report_pages_summary,


P_STUDIES = [name for name, study in STUDIES.items() if study.varies_processes()]
MODEL_FIGURES = directory(stage_output("model_figures", "figures"))


rule model_sheet:
    input:
        models_json=rules.models.output.models_json,
        predictions=rules.models.output.predictions,
    output:
        sheet=report(stage_output("model_sheet", "sheet"), caption="../report/model_sheet.rst",
                     category="{study}", subcategory="models"),
    conda:
        ENV
    log:
        stage_log("model_sheet"),
    script:
        "../../scripts/model_sheet.py"


rule model_figures:
    input:
        models_json=rules.models.output.models_json,
        predictions=rules.models.output.predictions,
    output:
        figures=report(MODEL_FIGURES, patterns=["{name}.png"], caption="../report/model_figures.rst",
                       category="{study}", subcategory="models (each)") if ZIP_REPORT else MODEL_FIGURES,
    conda:
        ENV
    log:
        stage_log("model_figures"),
    script:
        "../../scripts/model_figures.py"


rule report_pages:
    input:
        variability_summary=rules.variability.output.summary,
        variability=rules.variability.output.table,
        run_order=rules.variability.output.order,
        medians=rules.aggregate.output.medians,
        models=rules.models.output.table,
        validation=rules.models.output.validation,
    output:
        variability=report(stage_output("report_pages", "variability"), caption="../report/variability_table.rst",
                           category="{study}", subcategory="variability"),
        measurements=report(stage_output("report_pages", "measurements"), caption="../report/measurements_table.rst",
                            category="{study}", subcategory="measurements"),
        models=report(stage_output("report_pages", "models"), caption="../report/models_table.rst",
                      category="{study}", subcategory="models"),
    params:
        pages={
            "variability": ["variability_summary", "variability", "run_order"],
            "measurements": ["medians"],
            "models": ["models", "validation"],
        },
    conda:
        ENV
    log:
        stage_log("report_pages"),
    script:
        "../../scripts/report_pages.py"


rule report_pages_scaling:
    input:
        scaling=rules.metrics.output.scaling,
        overhead_fits=rules.overhead.output.fits,
        pop_metrics=rules.metrics.output.pop_csv,
    output:
        scaling=report(stage_output("report_pages_scaling", "scaling"), caption="../report/scaling_table.rst",
                       category="{study}", subcategory="scaling"),
        efficiency=report(stage_output("report_pages_scaling", "efficiency"), caption="../report/efficiency_table.rst",
                          category="{study}", subcategory="efficiency"),
    wildcard_constraints:
        # only studies that vary the number of processes have these tables
        study="|".join(P_STUDIES) or "(?!)",
    params:
        pages={"scaling": ["scaling", "overhead_fits"], "efficiency": ["pop_metrics"]},
    conda:
        ENV
    log:
        stage_log("report_pages_scaling"),
    script:
        "../../scripts/report_pages_scaling.py"


rule report_pages_summary:
    input:
        models_summary=rules.models_summary.output.summary,
    output:
        models_summary=report(stage_output("report_pages_summary", "models_summary"), caption="../report/models_summary.rst",
                              category="all studies", subcategory="models"),
    params:
        pages={"models_summary": ["models_summary"]},
    conda:
        ENV
    log:
        stage_log("report_pages_summary"),
    script:
        "../../scripts/report_pages_summary.py"


# A study that did not get through (every run failed, a step failed) has no tables or models; `perfsweep
# run` then writes the report of the other studies with this page for it: its runs, their status and
# error (not a target of `all`).
rule failures_page:
    input:
        runs=rules.collect.output.runs,
    output:
        failures=report(stage_output("failures_page", "failures"), caption="../report/failures_table.rst",
                        category="{study}", subcategory="failures"),
    params:
        pages={"failures": ["runs"]},
    conda:
        ENV
    log:
        stage_log("failures_page"),
    script:
        "../../scripts/failures_page.py"
