"""Seed 000's per-rank observables (Khoshlessan et al.), on a tidy per-rank table.

Columns used (seconds, one row per run and rank): t_comp, t_IO, t_all_frame, t_end_loop, t_opening,
t_RMSD, t_comm, t_N. Derived here::

    t_Overhead1 = t_all_frame - t_IO - t_comp - t_end_loop
    t_Overhead2 = t_RMSD - t_all_frame - t_opening
    t_busy      = t_N - t_wait          (time outside waiting; see perfsweep.metrics.stragglers)
    comp_over_io, comp_over_comm = t_comp / t_IO, t_comp / t_comm      (NaN where the divisor is 0)
    t_total     = max over ranks of t_N                                 (per run)

perfsweep's own per-rank table (phases init, compute, io, comm, total) maps onto it as::

    init -> t_opening (set-up)   compute -> t_comp   io -> t_IO   comm -> t_comm   total -> t_N

and t_wait, the sum of the phases declared as waiting (``apps.registry.WAITING_PHASES``: comm, and any
phase an app adds there, e.g. a barrier's); without perfsweep's phases t_wait is t_comm.

and, when the regions table is given, the regions the rmsd app records (:data:`RMSD_REGIONS`) give
t_RMSD, t_all_frame, t_end_loop and the exact t_opening, so the RMSD study gets both overheads.
Usage::

    from perfsweep.metrics.observables import from_pipeline_ranks, run_totals, repetition_stats
    ranks = from_pipeline_ranks(ranks_csv_frame, regions_csv_frame)     # seed-000 names + overheads
    runs = run_totals(ranks, ["run_id", "config_id", "p"])              # t_total, means and maxima
    stats = repetition_stats(runs, ["p"], ["t_total"])                  # median, min, max, IQR
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfsweep.apps.registry import WAITING_PHASES

PIPELINE_MAP = {"init": "t_opening", "compute": "t_comp", "io": "t_IO", "comm": "t_comm", "total": "t_N"}

# Region paths of perfsweep.apps.rmsd -> seed-000 observables (see that module's docstring).
RMSD_REGIONS = {"block_rmsd": "t_RMSD", "block_rmsd/opening": "t_opening",
                "block_rmsd/frames": "t_all_frame", "block_rmsd/frames/end_loop": "t_end_loop"}

COMPONENTS = ("t_comp", "t_IO", "t_comm", "t_opening", "t_end_loop", "t_all_frame", "t_RMSD",
              "t_Overhead1", "t_Overhead2", "t_wait", "t_busy", "t_N")


def from_pipeline_ranks(ranks: pd.DataFrame, regions: pd.DataFrame | None = None,
                        region_map: dict[str, str] | None = None, key_cols: tuple[str, ...] = ("run_id", "rank"),
                        ) -> pd.DataFrame:
    """perfsweep's ranks.csv with seed-000 column names and overheads added (the originals stay).

    ``regions`` is the tidy regions table (run_id, rank, region, time); the regions named in
    ``region_map`` (default :data:`RMSD_REGIONS`) become columns and take precedence over the phase
    mapping (the rmsd app's opening region equals its init phase; other apps have no such regions).
    """
    out = ranks.copy()
    for src, dst in PIPELINE_MAP.items():
        if src in out:
            out[dst] = out[src]
    waiting = [k for k in WAITING_PHASES if k in out]
    if waiting:
        out["t_wait"] = out[waiting].sum(axis=1, min_count=1)
    region_map = RMSD_REGIONS if region_map is None else region_map
    if regions is not None and not regions.empty:
        chosen = regions[regions["region"].isin(list(region_map))]
        if not chosen.empty:
            wide = chosen.pivot_table(index=list(key_cols), columns="region", values="time", aggfunc="sum")
            wide = wide.rename(columns=region_map).reset_index()
            wide.columns.name = None
            out = out.drop(columns=[c for c in wide if c not in key_cols and c in out]).merge(
                wide, on=list(key_cols), how="left")
    return add_overheads(out)


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    # A rank that does no I/O (or no communication) has no meaningful ratio, not an infinite one.
    return num / den.where(den > 0)


def add_overheads(df: pd.DataFrame) -> pd.DataFrame:
    """Add t_Overhead1/2 and the compute/IO, compute/comm ratios where their inputs exist."""
    out = df.copy()
    if {"t_all_frame", "t_IO", "t_comp", "t_end_loop"} <= set(out):
        out["t_Overhead1"] = out["t_all_frame"] - out["t_IO"] - out["t_comp"] - out["t_end_loop"]
    if {"t_RMSD", "t_all_frame", "t_opening"} <= set(out):
        out["t_Overhead2"] = out["t_RMSD"] - out["t_all_frame"] - out["t_opening"]
    wait = "t_wait" if "t_wait" in out else "t_comm"
    if {"t_N", wait} <= set(out):
        # what the rank spent not waiting for others: unlike t_N, not inflated by the slowest rank
        out["t_busy"] = out["t_N"] - out[wait]
    if {"t_comp", "t_IO"} <= set(out):
        out["comp_over_io"] = _ratio(out["t_comp"], out["t_IO"])
    if {"t_comp", "t_comm"} <= set(out):
        out["comp_over_comm"] = _ratio(out["t_comp"], out["t_comm"])
    return out


def run_totals(df: pd.DataFrame, run_cols: list[str], t_col: str = "t_N") -> pd.DataFrame:
    """One row per run: t_total = max over ranks of t_N, the number of ranks, and the mean and max
    over ranks of each seed-000 component present. The ratios follow the seed: compute/IO and
    compute/communication of the rank means (equation 2 of seed 000 for the latter)."""
    comps = [c for c in COMPONENTS if c in df]
    agg = df.groupby(run_cols, sort=True).agg(
        t_total=(t_col, "max"), ranks=(t_col, "size"), **{f"{c}_mean": (c, "mean") for c in comps},
        **{f"{c}_max": (c, "max") for c in comps})
    out = agg.reset_index()
    if "t_comp_mean" in out and "t_IO_mean" in out:
        out["comp_over_io"] = _ratio(out["t_comp_mean"], out["t_IO_mean"])
    if "t_comp_mean" in out and "t_comm_mean" in out:
        out["comp_over_comm"] = _ratio(out["t_comp_mean"], out["t_comm_mean"])
    return out


def repetition_stats(runs: pd.DataFrame, config_cols: list[str], value_cols: list[str]) -> pd.DataFrame:
    """Statistics over the repetitions of each configuration: for every value column its median,
    min, max and interquartile range (q75 - q25), and the repetition count ``n``."""
    rows = []
    for key, g in runs.groupby(config_cols, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = {**dict(zip(config_cols, key)), "n": len(g)}
        for c in value_cols:
            v = g[c].astype(float).dropna()
            row.update({f"{c}_median": v.median(), f"{c}_min": v.min(), f"{c}_max": v.max(),
                        f"{c}_iqr": v.quantile(0.75) - v.quantile(0.25) if len(v) else np.nan})
        rows.append(row)
    return pd.DataFrame(rows)
