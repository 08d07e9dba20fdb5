# Rule figures -> perfsweep.stages.figures.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, figures

call(snakemake, figures.run)  # noqa: F821 (Snakemake defines snakemake)
