import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.models(snakemake.input.aggregate, **snakemake.output, **snakemake.params, study=snakemake.wildcards.study)
