import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep.plots import models

models.model_figures(snakemake.input.models_json, snakemake.input.predictions, snakemake.output.figures,
                     study=snakemake.wildcards.study)
models.model_sheet(snakemake.input.models_json, snakemake.input.predictions, snakemake.output.sheet,
                   study=snakemake.wildcards.study)
