import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.plot_sweep(snakemake.input.runs, snakemake.input.medians, snakemake.output.figure,
                  snakemake.params.varied, snakemake.wildcards.study)
