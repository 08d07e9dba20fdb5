"""Speed-up and efficiency against the smallest run of a study (seed 000).

S(N) = T(N_ref) / T(N) with T the mean (or median) over repetitions of t_total; E(N) = S(N) N_ref / N.
With N_ref = 1 this is the usual S = t(1)/t(N), E = S/N (seed 000 prints the inverse by mistake).
Where the smallest run has more than one rank, the ``reference`` column says so: speed-up and
efficiency are then relative to it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def scaling_table(runs: pd.DataFrame, n_col: str, t_col: str = "t_total", stat: str = "mean",
                  group_cols: list[str] | None = None) -> pd.DataFrame:
    group_cols = list(group_cols or [])
    rows = []
    groups = runs.groupby(group_cols, sort=True) if group_cols else [((), runs)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        per_n = g.groupby(n_col)[t_col].agg(["mean", "median", "std", "min", "max", "count"]).sort_index()
        t = per_n[stat]
        n_ref = float(per_n.index.min())
        t_ref = float(t.loc[per_n.index.min()])
        ref_rel = per_n["std"].iloc[0] / t_ref if per_n["count"].iloc[0] > 1 else np.nan
        for n, row in per_n.iterrows():
            s = t_ref / row[stat]
            # spread of S = T(N_ref)/T(N) from the spreads of both times (first order), as the authors'
            # std_S = S sqrt((s_1/T_1)^2 + (s_N/T_N)^2); also at N_ref itself, where S = 1
            s_std = s * np.hypot(ref_rel, row["std"] / row[stat]) if row["count"] > 1 else np.nan
            rows.append({**dict(zip(group_cols, key)), n_col: n, f"{t_col}_{stat}": row[stat],
                         f"{t_col}_std": row["std"], f"{t_col}_min": row["min"], f"{t_col}_max": row["max"],
                         "repetitions": int(row["count"]), "speed_up": s, "speed_up_std": s_std,
                         "efficiency": s * n_ref / n, "ideal_speed_up": n / n_ref,
                         "reference": "1 rank" if n_ref == 1 else f"relative to {n_ref:g} ranks"})
    return pd.DataFrame(rows)
