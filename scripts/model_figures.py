# Rule model_figures -> perfsweep.stages.model_figures.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, model_figures

call(snakemake, model_figures.run)  # noqa: F821 (Snakemake defines snakemake)
