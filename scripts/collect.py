import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages
from perfsweep.errors import one_line_errors

with one_line_errors():  # a record damaged after the sweep was planned: one line naming the file
    stages.collect(snakemake.params.records, **snakemake.output)  # records or bundle manifests
