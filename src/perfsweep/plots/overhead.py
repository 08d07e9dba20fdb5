"""Figure like seed 003's Fig. 2: measured t_n, Amdahl, the overhead-model fit, the best triples'
curves (dashed), the estimated overhead tau_n and, where known, the measured MPI overhead."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfsweep.overhead import model_overhead, model_time
from perfsweep.plots.style import new_figure, save_figure

COLORS = {"measured": "#c0392b", "amdahl": "0.55", "fit": "#17becf", "tau": "#ff7f0e", "mpi": "#1f4e9c"}


def draw_overhead(ax, title: str, result: dict, unit: str = "s", triples: int = 2) -> pd.DataFrame:
    """Draw one data set on ``ax``; returns the plotted curves as a tidy frame."""
    cur, fit, t1 = result["curve"], result["fit"], result["t1"]
    n = np.concatenate([[1.0], cur["n"]])
    grid = np.unique(np.concatenate([np.geomspace(1, n.max(), 200), n]))
    rows = []

    def line(x, y, label, **kw):
        ax.plot(x, y, label=label, **kw)
        rows.extend({"panel": title, "series": label, "n": a, "value": b} for a, b in zip(x, y))

    ax.scatter(n, np.concatenate([[t1], cur["t_measured"]]), color=COLORS["measured"], s=22, zorder=5,
               label="measured $t_n$")
    rows.extend({"panel": title, "series": "measured t_n", "n": a, "value": b}
                for a, b in zip(n, np.concatenate([[t1], cur["t_measured"]])))
    line(grid, fit.amdahl_f * t1 + (1 - fit.amdahl_f) * t1 / grid,
         f"Amdahl, f={fit.amdahl_f:.3g}", color=COLORS["amdahl"], lw=1.2)
    line(grid, model_time(grid, t1, fit.f_s, fit.b, fit.c),
         f"fit Eq. 1: f_s={fit.f_s:.3g}, b={fit.b:.3g}, c={fit.c:.3g}", color=COLORS["fit"], lw=2)
    line(grid, model_overhead(grid, t1, fit.f_s, fit.b, fit.c), "overhead tau_n (fit, Eq. 3)",
         color=COLORS["tau"], lw=2)
    for k, s in enumerate(result["top"][:triples]):
        label = f"triple {s.triple}: f_s={s.f_s:.3g}, b={s.b:.3g}, c={s.c:.3g}"
        line(grid, model_time(grid, t1, s.f_s, s.b, s.c), label, color=COLORS["fit"], ls="--", lw=1)
        line(grid, model_overhead(grid, t1, s.f_s, s.b, s.c), f"tau_n of triple {s.triple}",
             color=COLORS["tau"], ls="--", lw=1)
    if "tau_measured" in cur and np.isfinite(cur["tau_measured"]).any():
        ok = np.isfinite(cur["tau_measured"])
        ax.scatter(cur["n"][ok], cur["tau_measured"][ok], marker="^", color=COLORS["mpi"], s=22, zorder=5,
                   label="measured MPI overhead")
        rows.extend({"panel": title, "series": "measured MPI overhead", "n": a, "value": b}
                    for a, b in zip(cur["n"][ok], cur["tau_measured"][ok]))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.2 * min(np.min(cur["t_measured"]), np.nanmin(cur.get("tau_measured", [np.inf]))
                                 if "tau_measured" in cur else np.min(cur["t_measured"])))
    ax.set_xlabel("processes n")
    ax.set_ylabel(f"time [{unit}]")
    ax.set_title(f"{title}: RMSD fit {fit.rmsd:.4g} {unit}")
    ax.legend(fontsize=6.5, loc="best")
    return pd.DataFrame(rows)


def overhead_grid(results: dict, study: str, path) -> None:
    """One panel per group of a study (``perfsweep.overhead.fit_per_group``'s results), 3 per row; without
    a group the figure says why."""
    n = max(1, len(results))
    ncols = min(3, n)
    fig, axes = new_figure(ncols=ncols, nrows=(n + ncols - 1) // ncols, width=5.2, height=4.2)
    plotted = []
    for ax, (label, res) in zip(axes.flat, results.items()):
        plotted.append(draw_overhead(ax, f"{study} ({label})", res, triples=1))
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
        if not results:
            ax.text(0.5, 0.5, "no group with p = 1 and >= 3 points with p > 1", ha="center", va="center")
    save_figure(fig, path, pd.concat(plotted, ignore_index=True) if plotted else pd.DataFrame())
