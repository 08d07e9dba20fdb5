import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages
from perfsweep.errors import UserError

try:
    stages.aggregate(**snakemake.input, **snakemake.output, **snakemake.params)
except UserError as exc:  # e.g. a study in which every run failed: one line, in the log and on the console
    for stream in (sys.stderr, sys.__stderr__):
        print(f"perfsweep: {exc}", file=stream, flush=True)
    sys.exit(1)
