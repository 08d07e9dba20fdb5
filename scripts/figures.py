# Rule figures -> perfsweep.stages.figures.run, its input/output/params keys checked against run's parameters
import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")  # noqa: F821 this checkout's package, also in a conda env
from perfsweep.stages import call, figures  # noqa: E402

call(snakemake, figures.run)  # noqa: F821
