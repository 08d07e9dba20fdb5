"""The measured grid (seed 001, Fig. 4): every configuration as a point in parameter space, coloured
by its median time, with the coefficient of variation (CV) as marker size and in a second panel.

Usage::

    from perfsweep.plots.grid import measured_grid
    measured_grid(medians, variability, ["n", "p"], "T_n_p", "results/figures/T_n_p/grid.png")

Two varied parameters are the x and y axes; a third (and any further ones) becomes one panel per
value (combination); a single varied parameter is the x axis with the median time as y.
"""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from perfsweep.plots.style import new_figure, save_figure

SIZE_MIN, SIZE_RANGE = 30.0, 300.0  # marker area in pt^2 for CV = 0 and the largest CV
CV_BARS = 40  # more bars than this are unreadable in one panel: show the highest CVs (the full table is a CSV)


def marker_sizes(cv: pd.Series) -> np.ndarray:
    """Marker area per configuration, proportional to its CV; unknown CVs (one good repetition) and
    an all-zero CV get the smallest marker rather than an invisible one."""
    values = cv.astype(float).fillna(0.0).to_numpy()
    top = float(np.max(values)) if len(values) else 0.0
    return SIZE_MIN + (SIZE_RANGE * values / top if top > 0 else 0.0 * values)


def measured_grid(medians: pd.DataFrame, variability: pd.DataFrame, varied: list[str], study: str,
                  path: str | os.PathLike[str]) -> pd.DataFrame:
    """Draw the grid figure and write its data (config_id, varied values, median, cv) beside it."""
    data = medians.merge(variability[["config_id", "cv"]], on="config_id", how="left")
    data["marker_size"] = marker_sizes(data["cv"])
    x = varied[0]
    y = varied[1] if len(varied) > 1 else "median"
    facets = varied[2:]
    groups = list(data.groupby(facets, sort=True)) if facets else [((), data)]
    ncols = min(len(groups), 4)
    nrows = math.ceil(len(groups) / ncols)
    fig, axes = new_figure(ncols=ncols + 1, nrows=nrows, width=4.2, height=3.6, layout="constrained")
    vmin, vmax = float(data["median"].min()), float(data["median"].max())
    sc = None
    for i, (key, d) in enumerate(groups):
        ax = axes[i // ncols, i % ncols]
        sc = ax.scatter(d[x], d[y], c=d["median"], cmap="viridis", vmin=vmin, vmax=vmax, s=d["marker_size"],
                        edgecolors="k", linewidths=0.4)
        ax.set_xlabel(x)
        ax.set_ylabel("median time [s]" if y == "median" else y)
        key = key if isinstance(key, tuple) else (key,)
        where = ", ".join(f"{f} = {v:g}" for f, v in zip(facets, key))
        ax.set_title(f"{study}: {where}" if where else f"{study}: measured configurations", fontsize=9)
    for j in range(len(groups), nrows * ncols):  # empty facet slots
        axes[j // ncols, j % ncols].axis("off")
    fig.colorbar(sc, ax=axes[:, ncols - 1].tolist(), label="median time [s]", shrink=0.85)
    cv = data["cv"].astype(float)
    if cv.notna().any() and cv.max() > 0:  # a size legend: what the smallest and largest markers mean
        for value in (0.0, float(cv.max())):
            axes[0, 0].scatter([], [], s=SIZE_MIN + SIZE_RANGE * value / float(cv.max()), c="w", edgecolors="k",
                               linewidths=0.4, label=f"CV {100 * value:.1f} %")
        axes[0, 0].legend(fontsize=7, loc="best", title="marker size", title_fontsize=7)
    cvax = axes[0, -1]
    order = data.sort_values("cv", ascending=False, na_position="last").head(CV_BARS)
    cvax.barh(range(len(order)), 100 * order["cv"].fillna(0), color="0.5")
    cvax.set_yticks(range(len(order)), order["config_id"], fontsize=max(3, 8 - len(order) // 25))
    cvax.invert_yaxis()
    cvax.set_xlabel("coefficient of variation [%]")
    shown = f"{CV_BARS} highest of {len(data)}" if len(data) > CV_BARS else "per configuration"
    cvax.set_title(f"CV, {shown}" + (" (n/a: < 2 good runs)" if cv.isna().any() else ""), fontsize=9)
    for r in range(1, nrows):
        axes[r, -1].axis("off")
    plotted = data[["config_id", *varied, "median", "cv", "marker_size"]]
    save_figure(fig, path, plotted)
    plt.close("all")
    return plotted
