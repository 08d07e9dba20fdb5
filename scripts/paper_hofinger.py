# Rule paper_hofinger -> perfsweep.stages.paper_hofinger.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, paper_hofinger

call(snakemake, paper_hofinger.run)  # noqa: F821 (Snakemake defines snakemake)
