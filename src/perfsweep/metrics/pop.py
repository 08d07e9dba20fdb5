"""POP multiplicative efficiency metrics (seed 004), per run, from per-rank useful time and runtime.

    Load Balance (LB)               = mean(comp) / max(comp)
    Communication Efficiency (CommE) = max(comp) / runtime
    Parallel Efficiency (PE)        = mean(comp) / runtime = LB x CommE
    Computation Scaling (CompS)     strong: sum(comp_ref) / sum(comp);  weak: mean(comp_ref) / mean(comp)
    Global Efficiency (GE)          = PE x CompS
runtime = the run's time (max over ranks of the total), comp = useful computation per rank, ref = the
run with the fewest processes. Hybrid runs (ranks x threads, with per-thread useful time):
    MPI Parallel Efficiency    = mean over ranks of (time outside MPI) / runtime
    Hybrid Parallel Efficiency = sum(thread useful) / (threads x ranks x runtime)
    Thread Parallel Efficiency = Hybrid PE / MPI PE   (may exceed 1)
Serialization and Transfer efficiencies need an ideal-network replay (Dimemas); without one they are
not computed here, rather than invented.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HIERARCHY = [
    ("Global Efficiency", 0), ("Parallel Efficiency", 1), ("Load Balance", 2),
    ("Communication Efficiency", 2), ("Computation Scaling", 1),
    ("MPI Parallel Efficiency", 2), ("Thread Parallel Efficiency", 2),
]


def pop_metrics(ranks: pd.DataFrame, run_cols: list[str], p_col: str, comp_col: str = "compute",
                total_col: str = "total", comm_col: str = "comm", scaling: str = "strong") -> pd.DataFrame:
    """One row per run with the POP metrics; reference = the run(s) with the smallest p."""
    if scaling not in ("strong", "weak"):
        raise ValueError(f"scaling must be strong or weak, not {scaling!r}")
    rows = []
    for key, g in ranks.groupby(run_cols, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        comp = g[comp_col].to_numpy(float)
        runtime = float(g[total_col].max())
        row = dict(zip(run_cols, key))
        row.update({p_col: g[p_col].iloc[0], "runtime": runtime, "comp_sum": comp.sum(), "comp_mean": comp.mean(),
                    "Load Balance": comp.mean() / comp.max(), "Communication Efficiency": comp.max() / runtime,
                    "Parallel Efficiency": comp.mean() / runtime})
        if "thread_useful_sum" in g and g["thread_useful_sum"].notna().all():
            outside = (g[total_col] - g[comm_col]).to_numpy(float)
            mpi_pe = outside.mean() / runtime
            hybrid = g["thread_useful_sum"].sum() / (g["threads"].sum() * runtime)
            row.update({"MPI Parallel Efficiency": mpi_pe, "Hybrid Parallel Efficiency": hybrid,
                        "Thread Parallel Efficiency": hybrid / mpi_pe})
        rows.append(row)
    out = pd.DataFrame(rows)
    p_ref = out[p_col].min()
    ref = out[out[p_col] == p_ref]
    if scaling == "strong":
        out["Computation Scaling"] = ref["comp_sum"].mean() / out["comp_sum"]
    else:
        out["Computation Scaling"] = ref["comp_mean"].mean() / out["comp_mean"]
    out["Global Efficiency"] = out["Parallel Efficiency"] * out["Computation Scaling"]
    out["scaling"] = scaling
    return out


def detect_scaling(study_fixed_size: bool) -> str:
    return "strong" if study_fixed_size else "weak"


def pop_table(per_run: pd.DataFrame, config_cols: list[str], p_col: str) -> pd.DataFrame:
    """Median over repetitions per configuration; rows = metrics in their hierarchy, columns = configs by p."""
    metrics = [m for m, _ in HIERARCHY if m in per_run]
    med = per_run.groupby(config_cols, sort=False)[metrics].median()
    spread = per_run.groupby(config_cols, sort=False)[metrics].agg(lambda s: s.max() - s.min())
    med = med.reset_index().sort_values([p_col, *[c for c in config_cols if c != p_col]], kind="stable")
    labels = [", ".join(f"{c}={v:g}" for c, v in zip(config_cols, row)) for row in med[config_cols].itertuples(index=False)]
    table = med[metrics].T
    table.columns = labels
    table.index = ["  " * dict(HIERARCHY)[m] + m for m in metrics]
    spread = spread.reset_index().set_index(config_cols).loc[[tuple(r) for r in med[config_cols].itertuples(index=False)]]
    return table, spread


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
