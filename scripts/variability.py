# Rule variability -> perfsweep.stages.variability.run, its input/output/params keys checked against run's parameters
import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")  # noqa: F821 this checkout's package, also in a conda env
from perfsweep.stages import call, variability  # noqa: E402

call(snakemake, variability.run)  # noqa: F821
