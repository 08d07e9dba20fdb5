# Rule aggregate -> perfsweep.stages.aggregate.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, aggregate

call(snakemake, aggregate.run)  # noqa: F821 (Snakemake defines snakemake)
