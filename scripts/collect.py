import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.collect(snakemake.input.records, **snakemake.output)
