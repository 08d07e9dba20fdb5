# The HTML report's extra content (snakemake --report results/report.html): one figure per fitted
# model (every region and metric, not only the run time) and the study's tables as HTML pages, since
# the report embeds HTML but offers a CSV only as a download. Grouped like the figures of figures.smk,
# metrics.smk and overhead.smk: category = study, subcategory = kind.
# Needs from common.smk: R, STUDIES, varies_processes; from collect/models/metrics/overhead.smk their rules.

localrules:
    model_figures,
    report_tables,
    report_tables_scaling,
    report_models_summary,


P_STUDIES = [s for s in STUDIES if varies_processes(s)]


def get_report_outputs(study):
    """Everything report.smk makes for one study (for `rule all`)."""
    out = [f"{R}/figures/{study}/models", f"{R}/report/{study}/variability.html",
           f"{R}/report/{study}/measurements.html", f"{R}/report/{study}/models.html"]
    if study in P_STUDIES:
        out += [f"{R}/report/{study}/scaling.html", f"{R}/report/{study}/efficiency.html"]
    return out


def get_all_report_outputs(wildcards=None):
    """report.smk's outputs for every study plus the cross-study models table."""
    return [p for s in STUDIES for p in get_report_outputs(s)] + [f"{R}/report/models_summary.html"]


rule model_figures:
    input:
        models_json=rules.models.output.models_json,
        predictions=rules.models.output.predictions,
    output:
        figures=report(
            directory(f"{R}/figures/{{study}}/models"),
            patterns=["{name}.png"],
            caption="../report/model_figures.rst",
            category="{study}",
            subcategory="models",
        ),
    log:
        f"{R}/logs/model_figures/{{study}}.log",
    script:
        "../../scripts/plot_model_figures.py"


rule report_tables:
    input:
        variability_summary=rules.variability.output.summary,
        variability=rules.variability.output.table,
        medians=rules.aggregate.output.medians,
        models=rules.models.output.table,
    output:
        variability=report(f"{R}/report/{{study}}/variability.html", caption="../report/variability_table.rst",
                           category="{study}", subcategory="variability"),
        measurements=report(f"{R}/report/{{study}}/measurements.html", caption="../report/measurements_table.rst",
                            category="{study}", subcategory="measurements"),
        models=report(f"{R}/report/{{study}}/models.html", caption="../report/models_table.rst",
                      category="{study}", subcategory="models"),
    params:
        pages={
            "variability": ["variability_summary", "variability"],
            "measurements": ["medians"],
            "models": ["models"],
        },
    log:
        f"{R}/logs/report_tables/{{study}}.log",
    script:
        "../../scripts/plot_report_tables.py"


rule report_tables_scaling:
    input:
        scaling=rules.metrics.output.scaling,
        overhead_fits=rules.overhead.output.fits,
        pop_metrics=rules.metrics.output.pop_csv,
    output:
        scaling=report(f"{R}/report/{{study}}/scaling.html", caption="../report/scaling_table.rst",
                       category="{study}", subcategory="scaling"),
        efficiency=report(f"{R}/report/{{study}}/efficiency.html", caption="../report/efficiency_table.rst",
                          category="{study}", subcategory="efficiency"),
    wildcard_constraints:
        # only studies that vary the number of processes have these tables
        study="|".join(P_STUDIES) or "(?!)",
    params:
        pages={"scaling": ["scaling", "overhead_fits"], "efficiency": ["pop_metrics"]},
    log:
        f"{R}/logs/report_tables/{{study}}_scaling.log",
    script:
        "../../scripts/plot_report_tables.py"


rule report_models_summary:
    input:
        models_summary=rules.models_summary.output.summary,
    output:
        models_summary=report(f"{R}/report/models_summary.html", caption="../report/models_summary.rst",
                              category="all studies", subcategory="models"),
    params:
        pages={"models_summary": ["models_summary"]},
    log:
        f"{R}/logs/report_tables/models_summary.log",
    script:
        "../../scripts/plot_report_tables.py"
