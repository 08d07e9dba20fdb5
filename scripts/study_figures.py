import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.study_figures(**snakemake.input, **snakemake.output, **snakemake.params, study=snakemake.wildcards.study)
