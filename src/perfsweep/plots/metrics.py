"""Scaling and efficiency figures: speed-up and efficiency with ideal lines, per-component scaling,
per-rank stacked bars, and the POP efficiency table coloured as PyPOP does. Every figure writes its
plotted data as CSV beside the PNG (perfsweep.plots.style.save_figure).

    from perfsweep.plots.metrics import pop_heatmap, rank_bars, speedup_efficiency
    speedup_efficiency(scaling_table(runs, "p"), "p", "speedup.png", "study T_n_p")
    rank_bars(one_run_ranks, ["init", "compute", "io", "comm", "other"], "ranks.png", "run ...", "straggler")
    pop_heatmap(pop_table(per_run, ["n", "p"], "p")[0], "pop.png", "POP metrics, study T_n_p")
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from perfsweep.metrics.pop import NOT_COMPUTED, colour
from perfsweep.plots.style import new_figure, save_figure


def speedup_efficiency(table: pd.DataFrame, n_col: str, path: str | os.PathLike[str], title: str,
                       hue: str | None = None) -> None:
    fig, axes = new_figure(ncols=2)
    groups = table.groupby(hue) if hue else [(None, table)]
    for key, g in groups:
        label = f"{hue}={key:g}" if hue else "measured"
        axes[0, 0].errorbar(g[n_col], g["speed_up"], yerr=g["speed_up_std"], marker="o", capsize=3, label=label)
        axes[0, 1].plot(g[n_col], g["efficiency"], marker="o", label=label)
    n = np.sort(table[n_col].unique())
    axes[0, 0].plot(n, n / n.min(), "k--", lw=1, label="ideal")
    axes[0, 1].plot(n, np.ones_like(n, dtype=float), "k--", lw=1, label="ideal")
    ref = table["reference"].iloc[0]
    axes[0, 0].set(xlabel=f"processes {n_col}", ylabel=f"speed-up S ({ref})", title=f"{title}: speed-up")
    axes[0, 1].set(xlabel=f"processes {n_col}", ylabel="efficiency E = S N_ref / N", title=f"{title}: efficiency",
                   ylim=(0, max(1.1, float(table["efficiency"].max()) * 1.05)))
    for ax in axes[0]:
        ax.legend(fontsize=7)
    save_figure(fig, path, table)


def component_scaling(runs: pd.DataFrame, n_col: str, components: list[str], path: str | os.PathLike[str],
                      title: str) -> None:
    data = runs.groupby(n_col)[components].mean().reset_index()
    fig, axes = new_figure()
    ax = axes[0, 0]
    for c in components:
        ax.plot(data[n_col], data[c], marker="o", label=c.replace("_mean", ""))
    ax.set(xscale="log", yscale="log", xlabel=f"processes {n_col}", ylabel="time [s] (mean over ranks and repeats)",
           title=f"{title}: components vs {n_col}")
    ax.legend(fontsize=7)
    save_figure(fig, path, data)


def rank_bars(ranks: pd.DataFrame, components: list[str], path: str | os.PathLike[str], title: str,
              straggler_col: str | None = None) -> None:
    data = ranks[["rank", *components] + ([straggler_col] if straggler_col else [])].sort_values("rank")
    fig, axes = new_figure(width=max(4.6, 0.18 * len(data) + 2))
    ax = axes[0, 0]
    bottom = np.zeros(len(data))
    for c in components:
        ax.bar(data["rank"], data[c], bottom=bottom, label=c)
        bottom += data[c].to_numpy()
    if straggler_col:
        for r, top, flag in zip(data["rank"], bottom, data[straggler_col]):
            if flag:
                ax.annotate("straggler", (r, top), ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set(xlabel="rank", ylabel="time [s]", title=title)
    ax.legend(fontsize=7)
    save_figure(fig, path, data)


def pop_heatmap(table: pd.DataFrame, path: str | os.PathLike[str], title: str) -> None:
    fig, axes = new_figure(width=1.2 * table.shape[1] + 3.2, height=0.45 * table.shape[0] + 1.4)
    ax = axes[0, 0]
    for i, metric in enumerate(table.index):
        for j, col in enumerate(table.columns):
            v = float(table.iloc[i, j])
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=colour(v), edgecolor="white"))
            ax.text(j + 0.5, i + 0.5, "" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, table.shape[1])
    ax.set_ylim(table.shape[0], 0)
    ax.set_xticks(np.arange(table.shape[1]) + 0.5, table.columns, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(np.arange(table.shape[0]) + 0.5, table.index, fontsize=8)
    ax.grid(False)
    ax.set_title(f"{title}\nred < 0.5, pink to 0.8, green 0.8-1 (median over repetitions)", fontsize=9)
    fig.text(0.01, -0.02, "Not shown: " + NOT_COMPUTED, fontsize=6, ha="left", va="top", wrap=True)
    save_figure(fig, path, table.reset_index(names="metric"))
