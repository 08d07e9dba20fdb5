import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.models_summary(snakemake.input.models, snakemake.output.summary)
