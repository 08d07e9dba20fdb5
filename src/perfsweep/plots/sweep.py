"""The first figure of every study: run time against each varied parameter.

Repetitions are points, medians are lines; the line colour is another varied parameter, and in
studies with three or more varied parameters the remaining ones are held at their middle value.
"""

from __future__ import annotations

import os

import pandas as pd
import seaborn as sns

from perfsweep.plots.style import new_figure, save_figure

UNITS = {"time": "time [s]"}


def _middle(values: pd.Series):
    uniq = sorted(values.unique())
    return uniq[len(uniq) // 2]


def time_vs_parameters(runs: pd.DataFrame, medians: pd.DataFrame, varied: list[str], study: str,
                       path: str | os.PathLike[str]) -> pd.DataFrame:
    """Plot and save; returns the plotted data (also written as CSV beside the PNG)."""
    ok = runs[runs["status"] == "ok"].copy()
    fig, axes = new_figure(ncols=len(varied))
    plotted = []
    for ax, x in zip(axes[0], varied):
        others = [v for v in varied if v != x]
        hue = others[0] if others else None
        held = {v: _middle(medians[v]) for v in others[1:]}
        pts, med = ok, medians
        for v, val in held.items():
            pts, med = pts[pts[v] == val], med[med[v] == val]
        pal = sns.color_palette("viridis", n_colors=max(1, med[hue].nunique() if hue else 1))
        sns.scatterplot(data=pts, x=x, y="time", hue=hue, palette=pal if hue else None, ax=ax,
                        alpha=0.5, s=18, legend=False)
        sns.lineplot(data=med.sort_values(x), x=x, y="median", hue=hue, palette=pal if hue else None,
                     ax=ax, marker="o", legend="full" if hue else False)
        title = f"{study}: time vs {x}"
        if held:
            title += " (" + ", ".join(f"{k}={v:g}" for k, v in held.items()) + ")"
        ax.set_title(title)
        ax.set_xlabel(x)
        ax.set_ylabel("time [s] (points: repetitions, line: median)")
        if hue and ax.get_legend():
            ax.legend(title=hue, fontsize=7)
        a = pts.assign(panel=x, kind="repetition", value=pts["time"])
        b = med.assign(panel=x, kind="median", value=med["median"])
        plotted.append(pd.concat([a, b], ignore_index=True)[["panel", "kind", *varied, "value"]])
    data = pd.concat(plotted, ignore_index=True)
    save_figure(fig, path, data)
    return data
