# Rule model_sheet -> perfsweep.stages.model_sheet.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, model_sheet

call(snakemake, model_sheet.run)  # noqa: F821 (Snakemake defines snakemake)
