# Rule paper_hofinger -> perfsweep.stages.paper_hofinger.run, its input/output/params keys checked against run's parameters
import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")  # noqa: F821 this checkout's package, also in a conda env
from perfsweep.stages import call, paper_hofinger  # noqa: E402

call(snakemake, paper_hofinger.run)  # noqa: F821
