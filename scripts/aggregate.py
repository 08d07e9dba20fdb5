import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages
from perfsweep.errors import one_line_errors

with one_line_errors():  # e.g. a study in which every run failed
    stages.aggregate(**snakemake.input, **snakemake.output, **snakemake.params)
