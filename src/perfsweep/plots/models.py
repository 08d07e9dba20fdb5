"""Model figures (seed 001): contour lines of 2-parameter models (Fig. 6), stacked horizontal slices
of 3-parameter models (Fig. 7), and model vs measurement (predicted vs measured, residuals)."""

from __future__ import annotations

import os
from typing import Callable

import numpy as np
import pandas as pd

from perfsweep.plots.style import new_figure, save_figure


def _axis(values: np.ndarray, n: int = 60) -> np.ndarray:
    return np.linspace(values.min(), values.max(), n)


def contour(f: Callable[[np.ndarray], np.ndarray], names: list[str], points: pd.DataFrame, formula: str,
            adj_r2: float, path: str | os.PathLike[str], title: str) -> pd.DataFrame:
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
    ax.set_title(f"{title}\n{formula}  (adj. R² {adj_r2:.3f}); time [s]", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    data = pd.DataFrame({names[0]: gx.ravel(), names[1]: gy.ravel(), "model_time": z.ravel()})
    save_figure(fig, path, data)
    return data


def slices(f: Callable[[np.ndarray], np.ndarray], names: list[str], points: pd.DataFrame, formula: str,
           adj_r2: float, path: str | os.PathLike[str], title: str) -> pd.DataFrame:
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
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, shrink=0.6, label="time [s]")
    ax.set(xlabel=names[0], ylabel=names[1], zlabel=names[2])
    ax.set_title(f"{title}\n{formula}  (adj. R² {adj_r2:.3f})", fontsize=8)
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
