# Rule report_pages -> perfsweep.stages.report_pages.run (input and output as two mappings, params keys
# checked against run's parameters)
from perfsweep.stages import call, report_pages

call(snakemake, report_pages.run)  # noqa: F821 (Snakemake defines snakemake)
