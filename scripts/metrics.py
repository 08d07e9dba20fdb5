import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.metrics(snakemake.input.ranks, **snakemake.output, **snakemake.params, study=snakemake.wildcards.study)
