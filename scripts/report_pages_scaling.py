# Rule report_pages_scaling -> perfsweep.stages.report_pages_scaling.run (input and output as two mappings, params keys
# checked against run's parameters)
from perfsweep.stages import call, report_pages_scaling

call(snakemake, report_pages_scaling.run)  # noqa: F821 (Snakemake defines snakemake)
