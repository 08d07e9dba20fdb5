import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.aggregate(**snakemake.input, **snakemake.output, **snakemake.params)
