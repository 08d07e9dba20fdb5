import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import report

report.model_figures(snakemake.input.models_json, snakemake.input.predictions, snakemake.output.figures,
                     study=snakemake.wildcards.study)
