import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages

stages.paper_mdanalysis(snakemake.input.data_dir, Path(snakemake.output.scaling).parent)
