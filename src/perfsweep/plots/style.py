"""One look for every perfsweep figure, and the rule that every figure has its data beside it.

Usage::

    from perfsweep.plots.style import new_figure, save_figure
    fig, axes = new_figure(ncols=2)
    ...
    save_figure(fig, "results/figures/nm/time.png", data=plotted_frame)   # also writes time.csv
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

PALETTE = "viridis"


def apply_style() -> None:
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 130, "savefig.bbox": "tight",
                         "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8})


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 4.6, height: float = 3.6, **kw):
    apply_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    return fig, axes


def save_figure(fig, path: str | os.PathLike[str], data: pd.DataFrame | None) -> None:
    """Save the PNG and, beside it, the plotted data as CSV with the same stem."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    if data is not None:
        data.to_csv(path.with_suffix(".csv"), index=False)


def placeholder(path: str | os.PathLike[str], text: str) -> None:
    """A figure that says why it has no data (e.g. no model, no per-rank timings), with an empty CSV."""
    fig, axes = new_figure()
    axes[0, 0].text(0.5, 0.5, text, ha="center")
    axes[0, 0].axis("off")
    save_figure(fig, path, pd.DataFrame())
