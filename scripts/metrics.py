# Rule metrics -> perfsweep.stages.metrics.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, metrics

call(snakemake, metrics.run)  # noqa: F821 (Snakemake defines snakemake)
