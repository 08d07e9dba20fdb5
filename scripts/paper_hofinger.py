import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.paper_hofinger(snakemake.input.table, Path(snakemake.output.note).parent)
