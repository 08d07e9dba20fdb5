"""Stragglers: ranks whose time stands out from the other ranks of the same run.

Rule (robust to the stragglers themselves): a rank is a straggler if
    t > median + k * 1.4826 * MAD   and   t > (1 + min_excess) * median
over the ranks of its run (MAD = median absolute deviation; 1.4826 MAD estimates the standard
deviation of normal data). Defaults k = 3, min_excess = 0.05: three robust standard deviations, and at
least 5 % slower than the typical rank, so that perfectly even runs with tiny jitter flag nobody.

t is seed 000's t_N by default. When a run ends in a rooted collective (the rmsd app's Gather) the
root's t_N also contains its wait for the slowest rank, so the root is flagged together with the
straggler; ``t_col="t_busy"`` (t_N minus the waiting phases, added by perfsweep.metrics.observables)
flags only the rank that was itself slow. Usage::

    from perfsweep.metrics.stragglers import flag_stragglers
    ranks = flag_stragglers(ranks, ["run_id"], t_col="t_N", k=3.0, min_excess=0.05)
    ranks[ranks["straggler"]]
"""

from __future__ import annotations

import pandas as pd


def flag_stragglers(df: pd.DataFrame, run_cols: list[str], t_col: str = "t_N", k: float = 3.0,
                    min_excess: float = 0.05) -> pd.DataFrame:
    """Copy of ``df`` with ``straggler_threshold`` and the boolean ``straggler`` per rank."""
    if t_col not in df:
        raise ValueError(f"per-rank table has no column {t_col!r} to look for stragglers in")
    out = df.copy()
    keys = [out[c] for c in run_cols]
    med = out.groupby(keys)[t_col].transform("median")
    mad = (out[t_col] - med).abs().groupby(keys).transform("median")
    out["straggler_threshold"] = pd.concat([med + k * 1.4826 * mad, med * (1 + min_excess)], axis=1).max(axis=1)
    out["straggler"] = out[t_col] > out["straggler_threshold"]
    return out
