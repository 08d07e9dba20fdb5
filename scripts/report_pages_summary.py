# Rule report_pages_summary -> perfsweep.stages.report_pages_summary.run (input and output as two mappings, params keys
# checked against run's parameters)
from perfsweep.stages import call, report_pages_summary

call(snakemake, report_pages_summary.run)  # noqa: F821 (Snakemake defines snakemake)
