"""The measured grid (seed 001, Fig. 4): every configuration as a point in parameter space, coloured
by its median time, with the coefficient of variation as marker size and in a second panel."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import pandas as pd

from perfsweep.plots.style import new_figure, save_figure


def measured_grid(medians: pd.DataFrame, variability: pd.DataFrame, varied: list[str], study: str,
                  path: str | os.PathLike[str]) -> pd.DataFrame:
    data = medians.merge(variability[["config_id", "cv"]], on="config_id", how="left")
    x, y = varied[0], varied[1] if len(varied) > 1 else None
    facet = varied[2] if len(varied) > 2 else None
    panels = sorted(data[facet].unique()) if facet else [None]
    fig, axes = new_figure(ncols=len(panels) + 1, width=4.4, layout="constrained")
    vmin, vmax = data["median"].min(), data["median"].max()
    cvmax = max(float(data["cv"].max() or 0), 1e-9)
    for ax, val in zip(axes[0], panels):
        d = data if val is None else data[data[facet] == val]
        yy = d[y] if y else [0] * len(d)
        sc = ax.scatter(d[x], yy, c=d["median"], cmap="viridis", vmin=vmin, vmax=vmax,
                        s=30 + 300 * d["cv"].fillna(0) / cvmax, edgecolors="k", linewidths=0.4)
        ax.set_xlabel(x)
        ax.set_ylabel(y or "")
        ax.set_title(f"{study}" + (f": {facet} = {val:g}" if facet else ": measured configurations"))
    fig.colorbar(sc, ax=axes[0, len(panels) - 1], label="median time [s]", shrink=0.85)
    cvax = axes[0, -1]
    order = data.sort_values("cv", ascending=False)
    cvax.barh(range(len(order)), 100 * order["cv"].fillna(0), color="0.5")
    cvax.set_yticks(range(len(order)), order["config_id"], fontsize=max(3, 8 - len(order) // 25))
    cvax.invert_yaxis()
    cvax.set_xlabel("coefficient of variation [%]")
    cvax.set_title("variability (marker size)")
    plotted = data[["config_id", *varied, "median", "cv"]]
    save_figure(fig, path, plotted)
    plt.close("all")
    return plotted
