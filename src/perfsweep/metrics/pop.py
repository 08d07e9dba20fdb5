"""POP multiplicative efficiency metrics (seed 004), per run, from per-rank useful time and runtime.

    Load Balance (LB)                = mean(comp) / max(comp)
    Communication Efficiency (CommE) = max(comp) / runtime
    Parallel Efficiency (PE)         = mean(comp) / runtime = LB x CommE
    Computation Scaling (CompS)      strong: sum(comp_ref) / sum(comp);  weak: mean(comp_ref) / mean(comp)
    Global Efficiency (GE)           = PE x CompS

runtime = the run's time (max over ranks of ``total``), comp = useful computation per resource (the
``compute`` phase of perfsweep's per-rank table by default; pass ``comp_col`` to count e.g. I/O as
useful too), ref = the run(s) with the fewest processes of the same group (their mean).

Hybrid runs (ranks x threads, the tidy table's ``threads``, ``thread_useful_sum`` and
``thread_useful_max`` columns): the resources are the threads, so comp is per-thread useful time::

    mean(comp) = sum over ranks of thread_useful_sum / total threads,   max(comp) = max thread_useful_max
    MPI Parallel Efficiency    = mean over ranks of out_MPI / runtime,   out_MPI = total - comm
    Thread Parallel Efficiency = PE / MPI PE     (OpenMP-like; may exceed 1, as the seed says)

so that both hierarchies hold: PE = LB x CommE = MPI PE x Thread PE. Pure-MPI runs leave the two
hybrid rows empty (NaN).

Not computed: Serialization and Transfer efficiency (the split of CommE) need an ideal-network
replay (Dimemas) we do not have, and Instruction/IPC/Frequency scaling need hardware counters. They
are left out rather than invented; :data:`NOT_COMPUTED` says so for table notes.

Usage::

    from perfsweep.metrics.pop import detect_scaling, pop_metrics, pop_table
    mode = detect_scaling(configs, "p")                  # "strong" or "weak", from the design
    per_run = pop_metrics(ranks, ["run_id", "config_id", "n", "p"], "p", scaling=mode)
    table, spread = pop_table(per_run, ["n", "p"], "p")  # medians over repetitions; max - min
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HIERARCHY = [
    ("Global Efficiency", 0), ("Parallel Efficiency", 1), ("Load Balance", 2),
    ("Communication Efficiency", 2), ("MPI Parallel Efficiency", 2), ("Thread Parallel Efficiency", 2),
    ("Computation Scaling", 1),
]

NOT_COMPUTED = ("Serialization and Transfer efficiencies (the split of Communication Efficiency) need an "
                "ideal-network replay (Dimemas) and are not computed; nor are Instruction/IPC/Frequency "
                "scaling (no hardware counters).")

THREAD_COLS = ("threads", "thread_useful_sum", "thread_useful_max")


def _has_threads(g: pd.DataFrame) -> bool:
    return all(c in g for c in THREAD_COLS) and bool(g[list(THREAD_COLS)].notna().all().all())


def pop_metrics(ranks: pd.DataFrame, run_cols: list[str], p_col: str, comp_col: str = "compute",
                total_col: str = "total", comm_col: str = "comm", scaling: str = "strong") -> pd.DataFrame:
    """One row per run with the POP metrics; reference = the run(s) with the smallest p.

    ``ranks`` has one row per run and rank; ``run_cols`` identify a run (and are copied to the
    output). Computation scaling compares every run with the smallest-p runs of this frame, so call
    it once per group of otherwise equal parameters.
    """
    if scaling not in ("strong", "weak"):
        raise ValueError(f"scaling must be strong or weak, not {scaling!r}")
    missing = [c for c in (*run_cols, p_col, comp_col, total_col, comm_col) if c not in ranks]
    if missing:
        raise ValueError(f"per-rank table lacks column(s) {missing}")
    rows = []
    for key, g in ranks.groupby(run_cols, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        runtime = float(g[total_col].max())
        row = dict(zip(run_cols, key))
        row.update({p_col: g[p_col].iloc[0], "runtime": runtime})
        if _has_threads(g):
            comp_sum = float(g["thread_useful_sum"].sum())
            comp_mean = comp_sum / float(g["threads"].sum())
            comp_max = float(g["thread_useful_max"].max())
            out_mpi = (g[total_col] - g[comm_col]).to_numpy(float)
            mpi_pe = out_mpi.mean() / runtime
        else:
            comp = g[comp_col].to_numpy(float)
            comp_sum, comp_mean, comp_max = comp.sum(), comp.mean(), comp.max()
            mpi_pe = np.nan
        pe = comp_mean / runtime
        row.update({"comp_sum": comp_sum, "comp_mean": comp_mean, "comp_max": comp_max,
                    "Load Balance": comp_mean / comp_max, "Communication Efficiency": comp_max / runtime,
                    "Parallel Efficiency": pe, "MPI Parallel Efficiency": mpi_pe,
                    "Thread Parallel Efficiency": pe / mpi_pe})
        rows.append(row)
    out = pd.DataFrame(rows)
    ref = out[out[p_col] == out[p_col].min()]
    if scaling == "strong":
        out["Computation Scaling"] = ref["comp_sum"].mean() / out["comp_sum"]
    else:
        out["Computation Scaling"] = ref["comp_mean"].mean() / out["comp_mean"]
    out["Global Efficiency"] = out["Parallel Efficiency"] * out["Computation Scaling"]
    out["scaling"] = scaling
    return out


def detect_scaling(configs: pd.DataFrame, p_col: str, size_cols: list[str] | None = None) -> str:
    """Strong or weak scaling, from the study's design (its configurations), not from timings.

    Weak scaling grows the problem with the process count: some problem-size parameter takes more
    than one value and is proportional to p over all configurations (e.g. n = 1000 p). Otherwise the
    problem sizes are set independently of p (a grid, or p alone varies) and every size is compared
    across p: strong scaling. ``size_cols`` defaults to every other numeric column.

    Why not from the timings: under strong scaling with poor computation scaling (e.g. oversubscribed
    cores) the summed useful time grows with p just as under weak scaling, which is exactly what
    Computation Scaling is meant to show, so the timings cannot tell the two apart.
    """
    if size_cols is None:
        size_cols = [c for c in configs.select_dtypes("number") if c != p_col]
    p = configs[p_col].astype(float)
    if p.nunique() < 2:
        return "strong"
    for col in size_cols:
        size = configs[col].astype(float)
        if size.nunique() > 1 and np.allclose(size / p, (size / p).iloc[0], rtol=1e-9):
            return "weak"
    return "strong"


def pop_table(per_run: pd.DataFrame, config_cols: list[str], p_col: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Median over repetitions per configuration: rows = metrics in their hierarchy (indented by
    level), columns = configurations ordered by p; and the spread (max - min over repetitions) with
    the same layout. Hybrid rows appear only when some run has threads."""
    metrics = [m for m, _ in HIERARCHY if m in per_run and per_run[m].notna().any()]
    grouped = per_run.groupby(config_cols, sort=False)[metrics]
    med = grouped.median().reset_index()
    spread = grouped.agg(lambda s: s.max() - s.min()).reset_index()
    order = [p_col, *[c for c in config_cols if c != p_col]]
    med = med.sort_values(order, kind="stable")
    spread = spread.set_index(config_cols).reindex(med.set_index(config_cols).index).reset_index()
    labels = [", ".join(f"{c}={_fmt(v)}" for c, v in zip(config_cols, row))
              for row in med[config_cols].itertuples(index=False)]
    level = dict(HIERARCHY)
    names = ["  " * level[m] + m for m in metrics]
    table, spread_table = med[metrics].T, spread[metrics].T
    for t in (table, spread_table):
        t.columns = labels
        t.index = names
    return table, spread_table


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def colour(value: float) -> tuple[float, float, float]:
    """PyPOP's code: red below 0.5, shading through pink to 0.8, green from 0.8 to 1 (and above)."""
    if not np.isfinite(value):
        return (0.9, 0.9, 0.9)
    if value < 0.5:
        return (0.90, 0.25, 0.25)
    if value < 0.8:
        f = (value - 0.5) / 0.3
        return (0.95, 0.55 + 0.3 * f, 0.6 + 0.3 * f)
    return (0.45, 0.80, 0.45)
