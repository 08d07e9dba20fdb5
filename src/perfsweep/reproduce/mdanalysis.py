"""Reproduction of seed 000's scaling analysis from the authors' published per-rank timings.

    from perfsweep.reproduce.mdanalysis import reproduce_mdanalysis
    reproduce_mdanalysis("resources/reference-data/mdanalysis-rmsd", "results/paper/mdanalysis-rmsd")

T(N) = mean over the 5 repeats of t_total = max over ranks of t_N; S = T(1)/T(N) (the published
numbers use this; the seed's text prints the inverse); E = S/N.
"""

from __future__ import annotations

import os
from pathlib import Path

from perfsweep.layout import paper_file
from perfsweep.metrics.mdanalysis_import import read_mdanalysis
from perfsweep.metrics.observables import add_overheads, run_totals
from perfsweep.metrics.scaling import scaling_table
from perfsweep.metrics.stragglers import flag_stragglers
from perfsweep.plots.metrics import component_scaling, rank_bars, speedup_efficiency
from perfsweep.tables import write_table


STAGE = "paper_mdanalysis"  # its files: perfsweep.layout.PAPERS


def reproduce_mdanalysis(data_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], bars_n: int = 72) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ranks = flag_stragglers(add_overheads(read_mdanalysis(data_dir)), ["N", "repeat"])
    ranks.to_csv(paper_file(out, STAGE, "ranks"), index=False)
    runs = run_totals(ranks, ["N", "repeat"])
    runs.to_csv(paper_file(out, STAGE, "runs"), index=False)
    table = scaling_table(runs, "N", "t_total", stat="mean")
    write_table(table, str(paper_file(out, STAGE, "scaling").with_suffix("")), caption="RMSD analysis: scaling (seed 000)")
    speedup_efficiency(table, "N", paper_file(out, STAGE, "figure"), "MDAnalysis RMSD")
    component_scaling(runs, "N", ["t_comp_mean", "t_IO_mean", "t_comm_mean", "t_opening_mean"],
                      paper_file(out, STAGE, "components"), "MDAnalysis RMSD")
    one = ranks[(ranks["N"] == bars_n) & (ranks["repeat"] == ranks["repeat"].min())]
    one = one.assign(t_other=one["t_N"] - one["t_comp"] - one["t_IO"] - one["t_comm"] - one["t_opening"])
    rank_bars(one, ["t_opening", "t_comp", "t_IO", "t_comm", "t_other"], paper_file(out, STAGE, "rank_bars", n=bars_n),
              f"MDAnalysis RMSD: per-rank times, N = {bars_n}, repeat {int(one['repeat'].iloc[0])}", "straggler")
