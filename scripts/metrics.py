import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.metrics(**snakemake.input, **snakemake.output, **snakemake.params, study=snakemake.wildcards.study)
