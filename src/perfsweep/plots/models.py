"""Model figures (seed 001): contour lines of 2-parameter models (Fig. 6), stacked horizontal slices
of 3-parameter models (Fig. 7), the curve of a 1-parameter model, and model vs measurement (predicted
vs measured, residuals). Every function takes the model as a callable f(X) -> y (X: N x q, columns in
the order of ``names``), so it plots any model, not only ours::

    from perfsweep.plots import models as mp
    mp.contour(model.predict, ["n", "p"], medians, str(model), model.adj_r2, "fig6.png", "T(n, p)")
    mp.slices(model.predict, ["p", "n", "m"], medians, str(model), model.adj_r2, "fig7.png", "T(p, n, m)")
    f2 = mp.hold(model.predict, ["n", "m", "d", "c"], shown=["n", "m", "c"], held={"d": 0.5})  # 4 -> 3
"""

from __future__ import annotations

import os
import textwrap
from typing import Callable

import numpy as np
import pandas as pd

from perfsweep.plots.style import new_figure, save_figure


def hold(f: Callable[[np.ndarray], np.ndarray], names: list[str], shown: list[str],
         held: dict[str, float]) -> Callable[[np.ndarray], np.ndarray]:
    """f restricted to the ``shown`` parameters, the others held at the given values.

    Why: a model of four or more parameters cannot be drawn whole; its figure shows three of them
    and says in the title at which values the others were held."""
    missing = [n for n in names if n not in shown and n not in held]
    if missing:
        raise ValueError(f"hold: no value for {', '.join(missing)}")

    def restricted(x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        full = np.empty((len(x), len(names)))
        for j, name in enumerate(names):
            full[:, j] = x[:, shown.index(name)] if name in shown else held[name]
        return f(full)

    return restricted


def line(f: Callable[[np.ndarray], np.ndarray], name: str, points: pd.DataFrame, measured: str, formula: str,
         adj_r2: float, path: str | os.PathLike[str], title: str, unit: str = "time [s]") -> pd.DataFrame:
    """A 1-parameter model as a curve over the measured range, the measured values as points."""
    x = _axis(points[name].to_numpy(float), 100)
    y = f(x[:, None])
    fig, axes = new_figure(width=5.6, height=4.0)
    ax = axes[0, 0]
    ax.plot(x, y, lw=1.5, label="model")
    ax.scatter(points[name], points[measured], c="k", s=14, zorder=3, label="measured medians")
    ax.set(xlabel=name, ylabel=unit)
    ax.set_title(_title(title, formula, adj_r2), fontsize=8)
    ax.legend(fontsize=7)
    data = pd.DataFrame({name: x, "model": y})
    save_figure(fig, path, data)
    return data


def _title(title: str, formula: str, adj_r2: float, extra: str = "") -> str:
    """Title, formula and adjusted R^2; long formulas wrapped so the title stays within the figure."""
    return "\n".join([title, *textwrap.wrap(formula, 90), f"adj. R² {adj_r2:.3f}{extra}"])


def _axis(values: np.ndarray, n: int = 60) -> np.ndarray:
    return np.linspace(values.min(), values.max(), n)


def contour(f: Callable[[np.ndarray], np.ndarray], names: list[str], points: pd.DataFrame, formula: str,
            adj_r2: float, path: str | os.PathLike[str], title: str, unit: str = "time [s]") -> pd.DataFrame:
    """Contour lines of f over the measured range of two parameters, with the measured points."""
    xs, ys = _axis(points[names[0]].to_numpy(float)), _axis(points[names[1]].to_numpy(float))
    gx, gy = np.meshgrid(xs, ys)
    z = f(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    fig, axes = new_figure(width=5.6, height=4.4)
    ax = axes[0, 0]
    cs = ax.contour(gx, gy, z, levels=10, cmap="viridis")
    ax.clabel(cs, fontsize=7, fmt="%.3g")
    ax.scatter(points[names[0]], points[names[1]], c="k", s=10, label="measured configurations")
    ax.set(xlabel=names[0], ylabel=names[1])
    ax.set_title(_title(title, formula, adj_r2, f"; contour labels: {unit}"), fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    data = pd.DataFrame({names[0]: gx.ravel(), names[1]: gy.ravel(), "model_time": z.ravel()})
    save_figure(fig, path, data)
    return data


def slices(f: Callable[[np.ndarray], np.ndarray], names: list[str], points: pd.DataFrame, formula: str,
           adj_r2: float, path: str | os.PathLike[str], title: str, unit: str = "time [s]") -> pd.DataFrame:
    """Horizontal slices of a 3-parameter model, one per measured value of the third parameter."""
    xs, ys = _axis(points[names[0]].to_numpy(float), 30), _axis(points[names[1]].to_numpy(float), 30)
    gx, gy = np.meshgrid(xs, ys)
    levels = np.sort(points[names[2]].unique())
    zs = [f(np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, v)])).reshape(gx.shape) for v in levels]
    vmin, vmax = min(z.min() for z in zs), max(z.max() for z in zs)
    import matplotlib.pyplot as plt
    from matplotlib import cm, colors

    plt.close("all")
    fig = plt.figure(figsize=(6.4, 5.2))
    ax = fig.add_subplot(projection="3d")
    norm = colors.Normalize(vmin, vmax)
    rows = []
    for v, z in zip(levels, zs):
        ax.plot_surface(gx, gy, np.full_like(gx, v), facecolors=cm.viridis(norm(z)), shade=False, alpha=0.8,
                        rstride=1, cstride=1, linewidth=0)
        rows.append(pd.DataFrame({names[0]: gx.ravel(), names[1]: gy.ravel(), names[2]: v, "model_time": z.ravel()}))
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, shrink=0.6, label=unit)
    ax.set(xlabel=names[0], ylabel=names[1], zlabel=names[2])
    ax.set_title(_title(title, formula, adj_r2), fontsize=8)
    data = pd.concat(rows, ignore_index=True)
    save_figure(fig, path, data)
    return data


def model_vs_measurement(pred: pd.DataFrame, path: str | os.PathLike[str], title: str) -> pd.DataFrame:
    """Predicted against measured medians (identity line) and the relative residual per configuration."""
    fig, axes = new_figure(ncols=2, width=5.0)
    ax = axes[0, 0]
    ax.scatter(pred["measured"], pred["predicted"], s=16)
    lo, hi = float(min(pred["measured"].min(), pred["predicted"].min())), float(max(pred["measured"].max(),
                                                                                 pred["predicted"].max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="predicted = measured")
    ax.set(xlabel="measured median time [s]", ylabel="model prediction [s]", title=f"{title}: model vs measurement")
    ax.legend(fontsize=7)
    ax2 = axes[0, 1]
    ax2.bar(range(len(pred)), 100 * pred["rel_error"], color="0.45")
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set_xticks(range(len(pred)), pred["config_id"], rotation=90, fontsize=max(3, 8 - len(pred) // 25))
    ax2.set(ylabel="(predicted - measured) / measured [%]", title="residual per configuration")
    save_figure(fig, path, pred)
    return pred
