# Rule collect -> perfsweep.stages.collect.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, collect

call(snakemake, collect.run)  # noqa: F821 (Snakemake defines snakemake)
