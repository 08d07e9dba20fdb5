# Rule models -> perfsweep.stages.models.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, models

call(snakemake, models.run)  # noqa: F821 (Snakemake defines snakemake)
