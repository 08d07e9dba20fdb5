"""Stage metrics: seed 000's per-rank observables, speed-up and efficiency, stragglers and seed 004's
POP metrics of a study that varies the process count."""

from __future__ import annotations

import pandas as pd

from perfsweep import tables
from perfsweep.apps.registry import RANK_PHASES
from perfsweep.metrics.observables import from_pipeline_ranks, run_totals
from perfsweep.metrics.pop import NOT_COMPUTED, detect_scaling, pop_metrics, pop_table
from perfsweep.metrics.scaling import scaling_table
from perfsweep.metrics.stragglers import flag_stragglers
from perfsweep.plots.metrics import pop_heatmap, rank_bars, speedup_efficiency
from perfsweep.plots.style import placeholder
from perfsweep.stages import PathLike, read, stem


def run(runs: PathLike, ranks: PathLike, regions: PathLike, observables: PathLike, scaling: PathLike, pop_csv: PathLike,
        pop_spread: PathLike, pop_figure: PathLike, speedup_figure: PathLike, ranks_figure: PathLike,
        varied: list[str], processes: str, scaling_mode: str, study: str) -> None:
    rk = read(ranks)
    others = [v for v in varied if v != processes]

    def speed_up(per_run: pd.DataFrame, t_col: str, of: str) -> None:  # median over repetitions
        table = scaling_table(per_run, processes, t_col, stat="median", group_cols=others)
        tables.write_table(table, stem(scaling), caption=f"Speed-up and efficiency{of}, study {study}")
        speedup_efficiency(table, processes, speedup_figure, study, hue=others[0] if others else None)

    if rk.empty:  # an external app without per-rank timings: speed-up and efficiency of its run times only
        for path in (pop_figure, ranks_figure):  # (pop.png's data: layout.figure_data, not the POP table)
            placeholder(path, f"{study}: no per-rank timings")
        for path in (observables, pop_csv, pop_spread):
            pd.DataFrame({"note": ["no per-rank timings: the app reports none (timings_json)"]}).to_csv(path, index=False)
        times = read(runs)
        speed_up(times[times["status"] == "ok"], "time", " of the run times")
        return
    # stragglers on busy time (t_N - t_comm): the root of a Gather waits for the slow rank and would
    # otherwise be flagged as well
    rk = flag_stragglers(from_pipeline_ranks(rk, read(regions)), ["run_id"], t_col="t_busy")
    run_cols = ["run_id", "config_id", *varied]
    totals = run_totals(rk, run_cols).merge(
        rk.groupby("run_id")["straggler"].sum().rename("stragglers").reset_index(), on="run_id")
    totals.to_csv(observables, index=False)
    speed_up(totals, "t_total", "")
    mode = detect_scaling(rk[varied].drop_duplicates(), processes) if scaling_mode == "auto" else scaling_mode
    # strong: compare runs of equal other parameters; weak: the problem grows with p, so the smallest-p
    # runs of the whole study are the reference
    groups = rk.groupby(others) if others and mode == "strong" else [((), rk)]
    per_run = pd.concat([pop_metrics(g, ["run_id", "config_id", *varied], processes, scaling=mode)
                         for _, g in groups], ignore_index=True)
    pt, spread = pop_table(per_run, varied, processes)
    caption = f"POP metrics of study {study} ({mode} scaling), median over repetitions. {NOT_COMPUTED}"
    tables.write_table(pt.reset_index(names="metric"), stem(pop_csv), caption=caption)
    tables.write_table(spread.reset_index(names="metric"), stem(pop_spread),
                       caption=f"Spread (max - min over repetitions) of the POP metrics, study {study}")
    pop_heatmap(pt, pop_figure, f"POP metrics, study {study} ({mode} scaling)")
    biggest = rk[rk[processes] == rk[processes].max()]
    one = biggest[biggest["run_id"] == biggest["run_id"].iloc[0]]
    rank_bars(one, [p for p in RANK_PHASES if p != "total"], ranks_figure,
              f"{study}: per-rank times of {one['run_id'].iloc[0]}", "straggler")
