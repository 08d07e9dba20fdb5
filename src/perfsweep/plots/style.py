"""One look for every perfsweep figure, and the rule that every figure has its data beside it.

Usage::

    from perfsweep.plots.style import new_figure, save_figure
    fig, axes = new_figure(ncols=2)
    ...
    save_figure(fig, "time.png", data=plotted_frame)   # also writes time.csv
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from PIL import Image  # noqa: E402

from perfsweep.layout import figure_data  # noqa: E402

PALETTE = "viridis"
PNG_COLOURS = 64  # a palette PNG; gradients (3-D slices) show steps, lines and text do not suffer


def apply_style() -> None:
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 100, "savefig.bbox": "tight",
                         "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8})


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 4.6, height: float = 3.6, **kw):
    apply_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    return fig, axes


def save_figure(fig, path: str | os.PathLike[str], data: pd.DataFrame | None, dpi: float | None = None) -> None:
    """Save the PNG and, beside it, the plotted data as CSV (perfsweep.layout.figure_data: with the same
    stem, unless a table of the stage has that name).

    A PNG is stored with a palette of PNG_COLOURS colours (no dithering): a plot has few colours,
    and this makes it three to four times smaller, so that the HTML report, which embeds every
    figure, stays small enough to send (with 100 dpi: at most 5 MB for the default sweep).
    ``dpi``: the resolution if not the style's (the report's model sheet uses less).

    A figure with a constrained layout is saved as laid out: that layout already keeps titles, labels,
    legends and colour bars inside the figure, and the style's tight bounding box would lay out and
    draw it once more (model sheets of 11 models here: 10.0-11.0 s with it, 6.6-9.2 s in six without)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    laid_out = isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    with plt.rc_context({"savefig.bbox": "standard"} if laid_out else {}):
        if path.suffix.lower() == ".png":
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi)
            image = Image.open(buf).convert("RGB").quantize(colors=PNG_COLOURS, dither=Image.Dither.NONE)
            image.save(path, optimize=True)
        else:
            fig.savefig(path, dpi=dpi)
    plt.close(fig)
    if data is not None:
        data.to_csv(figure_data(path), index=False)


def placeholder(path: str | os.PathLike[str], text: str) -> None:
    """A figure that says why it has no data (e.g. no model, no per-rank timings), with an empty CSV."""
    fig, axes = new_figure()
    axes[0, 0].text(0.5, 0.5, text, ha="center")
    axes[0, 0].axis("off")
    save_figure(fig, path, pd.DataFrame())
