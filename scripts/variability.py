# Rule variability -> perfsweep.stages.variability.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, variability

call(snakemake, variability.run)  # noqa: F821 (Snakemake defines snakemake)
