# Rule paper_mdanalysis -> perfsweep.stages.paper_mdanalysis.run, its input/output/params keys checked against run's parameters
from perfsweep.stages import call, paper_mdanalysis

call(snakemake, paper_mdanalysis.run)  # noqa: F821 (Snakemake defines snakemake)
