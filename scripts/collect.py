import sys

sys.stderr = open(snakemake.log[0], "w")
from perfsweep import stages
from perfsweep.errors import UserError

try:
    stages.collect(snakemake.params.records, **snakemake.output)  # input: records or bundle manifests
except UserError as exc:  # a record damaged after the sweep was planned: one line naming the file
    for stream in (sys.stderr, sys.__stderr__):
        print(f"perfsweep: {exc}", file=stream, flush=True)
    sys.exit(1)
