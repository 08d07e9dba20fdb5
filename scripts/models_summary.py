# Rule models_summary -> perfsweep.stages.models_summary.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, models_summary

call(snakemake, models_summary.run)  # noqa: F821 (Snakemake defines snakemake)
