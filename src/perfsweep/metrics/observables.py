"""Seed 000's per-rank observables (Khoshlessan et al.), on a tidy per-rank table.

Columns used (seconds, one row per run and rank): t_comp, t_IO, t_all_frame, t_end_loop, t_opening,
t_RMSD, t_comm, t_N. Derived here::

    t_Overhead1 = t_all_frame - t_IO - t_comp - t_end_loop
    t_Overhead2 = t_RMSD - t_all_frame - t_opening
    t_total     = max over ranks of t_N                      (per run)

perfsweep's own per-rank table (init, compute, io, comm, total) maps onto it as t_opening = init,
t_comp = compute, t_IO = io, t_comm = comm, t_N = total (see :func:`from_pipeline_ranks`).
"""

from __future__ import annotations

import pandas as pd

PIPELINE_MAP = {"init": "t_opening", "compute": "t_comp", "io": "t_IO", "comm": "t_comm", "total": "t_N"}


def from_pipeline_ranks(ranks: pd.DataFrame) -> pd.DataFrame:
    """perfsweep's ranks.csv with seed-000 column names added (the originals stay)."""
    out = ranks.copy()
    for src, dst in PIPELINE_MAP.items():
        if src in out:
            out[dst] = out[src]
    return out


def add_overheads(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    if {"t_all_frame", "t_IO", "t_comp", "t_end_loop"} <= set(out):
        out["t_Overhead1"] = out["t_all_frame"] - out["t_IO"] - out["t_comp"] - out["t_end_loop"]
    if {"t_RMSD", "t_all_frame", "t_opening"} <= set(out):
        out["t_Overhead2"] = out["t_RMSD"] - out["t_all_frame"] - out["t_opening"]
    if {"t_comp", "t_IO"} <= set(out):
        out["comp_over_io"] = out["t_comp"] / out["t_IO"]
    if {"t_comp", "t_comm"} <= set(out):
        out["comp_over_comm"] = out["t_comp"] / out["t_comm"]
    return out


def run_totals(df: pd.DataFrame, run_cols: list[str], t_col: str = "t_N") -> pd.DataFrame:
    """One row per run: t_total = max over ranks of t_N, and the means of the components."""
    comps = [c for c in ("t_comp", "t_IO", "t_comm", "t_opening", "t_end_loop") if c in df]
    agg = df.groupby(run_cols, sort=True).agg(
        t_total=(t_col, "max"), ranks=(t_col, "size"), **{f"{c}_mean": (c, "mean") for c in comps},
        **{f"{c}_max": (c, "max") for c in comps})
    out = agg.reset_index()
    if "t_comp_mean" in out and "t_IO_mean" in out:
        out["comp_over_io"] = out["t_comp_mean"] / out["t_IO_mean"]
    if "t_comp_mean" in out and "t_comm_mean" in out:
        out["comp_over_comm"] = out["t_comp_mean"] / out["t_comm_mean"]
    return out
