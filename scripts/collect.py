import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.collect(snakemake.params.records, **snakemake.output)  # input: records or bundle manifests
