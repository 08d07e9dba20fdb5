# Rule overhead -> perfsweep.stages.overhead.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, overhead

call(snakemake, overhead.run)  # noqa: F821 (Snakemake defines snakemake)
