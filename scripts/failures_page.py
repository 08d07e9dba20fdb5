# Rule failures_page -> perfsweep.stages.failures_page.run (input and output as two mappings, params keys
# checked against run's parameters)
from perfsweep.stages import call, failures_page

call(snakemake, failures_page.run)  # noqa: F821 (Snakemake defines snakemake)
