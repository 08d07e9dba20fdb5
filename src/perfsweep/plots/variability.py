"""The variability table (seed 001, Table 1) as a figure: CV per configuration with the threshold."""

from __future__ import annotations

import os

import pandas as pd

from perfsweep.plots.style import new_figure, save_figure


def variability_figure(var: pd.DataFrame, study: str, path: str | os.PathLike[str]) -> pd.DataFrame:
    data = var.sort_values("cv", ascending=False, na_position="last")[
        ["config_id", "cv", "n_ok", "n_runs", "flagged", "cv_threshold"]].reset_index(drop=True)
    fig, axes = new_figure(width=max(5.0, 0.12 * len(data) + 3), height=3.8)
    ax = axes[0, 0]
    colors = ["#c0392b" if f else "#7f8c8d" for f in data["flagged"]]
    ax.bar(range(len(data)), 100 * data["cv"].fillna(0), color=colors)
    thr = 100 * float(data["cv_threshold"].iloc[0])
    ax.axhline(thr, color="k", ls="--", lw=1, label=f"threshold {thr:g} %")
    ax.set_xticks(range(len(data)), data["config_id"], rotation=90, fontsize=max(3, 8 - len(data) // 25))
    cv = data["cv"].dropna()
    ax.set_title(f"{study}: CV per configuration (median {100 * cv.median():.1f} %, max {100 * cv.max():.1f} %, "
                 f"{int(data['flagged'].sum())} flagged)" if len(cv) else
                 f"{study}: no CV (fewer than 2 good repetitions per configuration)")
    ax.set_ylabel("coefficient of variation [%]")
    ax.legend()
    save_figure(fig, path, data)
    return data
