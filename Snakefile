# perfsweep: benchmark sweeps of MPI applications -> medians -> models, metrics, figures, report.
# The config is validated (schema and meaning) before any job is planned; see workflow/rules/common.smk.


from snakemake.utils import min_version


min_version("9.20")  # as pyproject.toml and envs/perfsweep.yaml ask


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/overhead.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        get_final_outputs,
        get_all_report_outputs,
        get_all_run_records,  # a deleted record is measured again (workflow/rules/run.smk)
    default_target: True


rule runs:  # the run records only: what `perfsweep run` measures in rounds (perfsweep.steps.rounds)
    input:
        get_all_run_records,
