"""Stragglers: ranks whose t_N stands out from the other ranks of the same run.

Rule (robust to the stragglers themselves): a rank is a straggler if
    t_N > median + k * 1.4826 * MAD   and   t_N > (1 + min_excess) * median
over the ranks of its run (MAD = median absolute deviation; 1.4826 MAD estimates the standard
deviation of normal data). Defaults k = 3, min_excess = 0.05: three robust standard deviations, and at
least 5 % slower than the typical rank, so that perfectly even runs with tiny jitter flag nobody.
"""

from __future__ import annotations

import pandas as pd


def flag_stragglers(df: pd.DataFrame, run_cols: list[str], t_col: str = "t_N", k: float = 3.0,
                    min_excess: float = 0.05) -> pd.DataFrame:
    out = df.copy()
    g = out.groupby(run_cols)[t_col]
    med = g.transform("median")
    mad = (out[t_col] - med).abs().groupby([out[c] for c in run_cols]).transform("median")
    out["straggler_threshold"] = pd.concat([med + k * 1.4826 * mad, med * (1 + min_excess)], axis=1).max(axis=1)
    out["straggler"] = out[t_col] > out["straggler_threshold"]
    return out
