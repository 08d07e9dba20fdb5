# Rule metrics -> perfsweep.stages.metrics.run, its input/output/params keys checked against run's parameters
import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")  # noqa: F821 this checkout's package, also in a conda env
from perfsweep.stages import call, metrics  # noqa: E402

call(snakemake, metrics.run)  # noqa: F821
