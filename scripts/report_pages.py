import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import report

report.pages(dict(snakemake.input.items()), dict(snakemake.output.items()), snakemake.params.pages,
             study=getattr(snakemake.wildcards, "study", None))
