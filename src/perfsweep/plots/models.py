"""Model figures (seed 001): contour lines of 2-parameter models (Fig. 6), stacked horizontal slices
of 3-parameter models (Fig. 7), the curve of a 1-parameter model, model vs measurement (predicted vs
measured, residuals), and the report's sheet of every model of a study on one page. The drawing
functions take the model as a callable f(X) -> y (X: N x q, columns in the order of ``names``), so
they plot any model, not only ours::

    from perfsweep.plots import models as mp
    mp.contour(model.predict, ["n", "p"], medians, str(model), model.adj_r2, "fig6.png", "T(n, p)")
    mp.slices(model.predict, ["p", "n", "m"], medians, str(model), model.adj_r2, "fig7.png", "T(p, n, m)")
    f2 = mp.hold(model.predict, ["n", "m", "d", "c"], shown=["n", "m", "c"], held={"d": 0.5})  # 4 -> 3
    # every model of a study (models.json, predictions.csv as the models stage writes them):
    mp.model_figures("models.json", "predictions.csv", "figures/nm/models", study="nm")  # one PNG each
    mp.model_sheet("models.json", "predictions.csv", "figures/nm/model_sheet.png", study="nm")  # all on one
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import cm, colors

from perfsweep.apps.metric_kinds import kind_of
from perfsweep.modeling.model import Model
from perfsweep.modeling.validation import is_validation
from perfsweep.plots.style import apply_style, new_figure, save_figure
from perfsweep.values import PathLike

Predict = Callable[[np.ndarray], np.ndarray]


def hold(f: Predict, names: list[str], shown: list[str], held: dict[str, float]) -> Predict:
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


def _title(title: str, formula: str, adj_r2: float, extra: str = "", width: int = 90) -> str:
    """Title, formula and adjusted R^2; long formulas wrapped so the title stays within the figure."""
    return "\n".join([title, *textwrap.wrap(formula, width), f"adj. R² {adj_r2:.3f}{extra}"])


def _axis(values: np.ndarray, n: int = 60) -> np.ndarray:
    return np.linspace(values.min(), values.max(), n)


# --- drawing into given axes (one figure per model, or one panel of the sheet) ---

def draw_line(ax, f: Predict, name: str, points: pd.DataFrame, measured: str, unit: str) -> pd.DataFrame:
    """A 1-parameter model as a curve over the measured range, the measured values as points."""
    x = _axis(points[name].to_numpy(float), 100)
    y = f(x[:, None])
    ax.plot(x, y, lw=1.5, label="model")
    ax.scatter(points[name], points[measured], c="k", s=14, zorder=3, label="measured medians")
    ax.set(xlabel=name, ylabel=unit)
    return pd.DataFrame({name: x, "model": y})


def draw_contour(ax, f: Predict, names: list[str], points: pd.DataFrame, fontsize: int = 7) -> pd.DataFrame:
    """Contour lines of f over the measured range of two parameters, with the measured points."""
    xs, ys = _axis(points[names[0]].to_numpy(float)), _axis(points[names[1]].to_numpy(float))
    gx, gy = np.meshgrid(xs, ys)
    z = f(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    cs = ax.contour(gx, gy, z, levels=10, cmap="viridis")
    ax.clabel(cs, fontsize=fontsize, fmt="%.3g")
    ax.scatter(points[names[0]], points[names[1]], c="k", s=10, label="measured configurations")
    ax.set(xlabel=names[0], ylabel=names[1])
    return pd.DataFrame({names[0]: gx.ravel(), names[1]: gy.ravel(), "model_time": z.ravel()})


def draw_slices(fig, ax, f: Predict, names: list[str], points: pd.DataFrame, unit: str,
                cells: int = 30) -> pd.DataFrame:
    """Horizontal slices of a 3-parameter model (``ax``: 3-D axes), one per measured value of the third,
    each a grid of ``cells`` x ``cells`` values."""
    xs, ys = _axis(points[names[0]].to_numpy(float), cells), _axis(points[names[1]].to_numpy(float), cells)
    gx, gy = np.meshgrid(xs, ys)
    levels = np.sort(points[names[2]].unique())
    zs = [f(np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, v)])).reshape(gx.shape) for v in levels]
    norm = colors.Normalize(min(z.min() for z in zs), max(z.max() for z in zs))
    rows = []
    for v, z in zip(levels, zs):
        ax.plot_surface(gx, gy, np.full_like(gx, v), facecolors=cm.viridis(norm(z)), shade=False, alpha=0.8,
                        rstride=1, cstride=1, linewidth=0)
        rows.append(pd.DataFrame({names[0]: gx.ravel(), names[1]: gy.ravel(), names[2]: v, "model_time": z.ravel()}))
    bar = fig.colorbar(cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, shrink=0.6, label=unit)
    ax.set(xlabel=names[0], ylabel=names[1], zlabel=names[2])
    return pd.concat(rows, ignore_index=True), bar


def draw_predicted(ax, pred: pd.DataFrame, unit: str = "time [s]") -> None:
    """Predicted against measured medians, with the identity line; validation points (never fitted)
    as red diamonds with the model's interval."""
    checks = is_validation(pred)
    fitted, val = pred[~checks], pred[checks]
    ax.scatter(fitted["measured"], fitted["predicted"], s=16, label="fitted configurations" if len(val) else None)
    if len(val):
        below = np.clip(val["predicted"] - val["low"], 0, None).fillna(0)
        above = np.clip(val["high"] - val["predicted"], 0, None).fillna(0)
        ax.errorbar(val["measured"], val["predicted"], yerr=[below, above], fmt="D", color="C3", ms=5, capsize=2,
                    label="validation points (90 % interval)")
    both = pd.concat([pred["measured"], pred["predicted"]])
    lo, hi = (float(both.min()), float(both.max())) if len(both) else (0.0, 1.0)
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="predicted = measured")
    ax.set(xlabel=f"measured median {unit}", ylabel=f"model prediction {unit}")


# --- one figure per call ---

def line(f: Predict, name: str, points: pd.DataFrame, measured: str, formula: str, adj_r2: float,
         path: PathLike, title: str, unit: str = "time [s]") -> pd.DataFrame:
    """A 1-parameter model as a curve over the measured range, the measured values as points."""
    fig, axes = new_figure(width=5.6, height=4.0)
    data = draw_line(axes[0, 0], f, name, points, measured, unit)
    axes[0, 0].set_title(_title(title, formula, adj_r2), fontsize=8)
    axes[0, 0].legend(fontsize=7)
    save_figure(fig, path, data)
    return data


def contour(f: Predict, names: list[str], points: pd.DataFrame, formula: str, adj_r2: float, path: PathLike,
            title: str, unit: str = "time [s]") -> pd.DataFrame:
    """Contour lines of f over the measured range of two parameters, with the measured points."""
    fig, axes = new_figure(width=5.6, height=4.4)
    data = draw_contour(axes[0, 0], f, names, points)
    axes[0, 0].set_title(_title(title, formula, adj_r2, f"; contour labels: {unit}"), fontsize=8)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    save_figure(fig, path, data)
    return data


def slices(f: Predict, names: list[str], points: pd.DataFrame, formula: str, adj_r2: float, path: PathLike,
           title: str, unit: str = "time [s]") -> pd.DataFrame:
    """Horizontal slices of a 3-parameter model, one per measured value of the third parameter."""
    plt.close("all")
    fig = plt.figure(figsize=(6.4, 5.2))
    ax = fig.add_subplot(projection="3d")
    data, _ = draw_slices(fig, ax, f, names, points, unit)
    ax.set_title(_title(title, formula, adj_r2), fontsize=8)
    save_figure(fig, path, data)
    return data


def model_vs_measurement(pred: pd.DataFrame, path: PathLike, title: str) -> pd.DataFrame:
    """Predicted against measured medians (identity line) and the relative residual per configuration."""
    fig, axes = new_figure(ncols=2, width=5.0)
    ax = axes[0, 0]
    draw_predicted(ax, pred)
    ax.set(title=f"{title}: model vs measurement")
    ax.legend(fontsize=7)
    ax2 = axes[0, 1]
    ax2.bar(range(len(pred)), 100 * pred["rel_error"], color=np.where(is_validation(pred), "C3", "0.45"))
    ax2.axhline(0, color="k", lw=0.8)
    ax2.set_xticks(range(len(pred)), pred["config_id"], rotation=90, fontsize=max(3, 8 - len(pred) // 25))
    ax2.set(ylabel="(predicted - measured) / measured [%]", title="residual per configuration")
    save_figure(fig, path, pred)
    return pred


# --- the models of a study (models.json and predictions.csv of the models stage) ---

def model_slug(region: str, metric: str) -> str:
    """A file name for the model of (region, metric): 'step/forces', 'time' -> 'time__step-forces'."""
    return f"{metric}__{re.sub(r'[^A-Za-z0-9_.=-]+', '-', region).strip('-') or 'root'}"


def unit_of(metric: str, entry: dict | None = None) -> str:
    """Axis label of a metric's values, in its unit as its models.json ``entry`` declares it (the run's
    metrics: seconds; an entry written before: guessed from the name, perfsweep.apps.metric_kinds)."""
    unit = kind_of(metric, row=entry).unit
    return f"{metric} [{unit}]" if unit else metric


@dataclass
class ModelView:
    """What a figure of one model draws: the (at most three) parameters shown, the function over them,
    the measured points at the held values of the others, and those held values."""
    model: Model
    shown: list[str]
    f: Predict
    points: pd.DataFrame  # columns: the model's parameters and "measured"
    held: dict[str, float]

    @classmethod
    def of(cls, model: Model, points: pd.DataFrame | None = None) -> "ModelView":
        """With four or more parameters the first three are shown and the others held at their middle
        measured value (a value that was measured, not an interpolated one). ``points``: the measured
        values to show (columns: the parameters and "measured"), by default those the model was fitted to."""
        names = list(model.param_names)
        if points is None:
            points = pd.DataFrame(np.asarray(model.points, dtype=float).reshape(-1, len(names)), columns=names)
            points["measured"] = np.asarray(model.values, dtype=float)
        shown, rest = names[:3], names[3:]
        held = {n: float(np.sort(points[n].unique())[len(points[n].unique()) // 2]) for n in rest}
        if not held:
            return cls(model, shown, model.predict, points, held)
        points = points[np.logical_and.reduce([points[n] == v for n, v in held.items()])]
        return cls(model, shown, hold(model.predict, names, shown, held), points, held)

    def title(self, title: str) -> str:
        return title + (" at " + ", ".join(f"{n} = {v:g}" for n, v in self.held.items()) if self.held else "")


def model_figure(model: Model, path: PathLike, title: str, unit: str = "time [s]",
                 points: pd.DataFrame | None = None) -> pd.DataFrame:
    """The shape of one model over the points it was fitted to (or ``points``, see ModelView.of): a
    curve (1 parameter), contour lines (2, seed 001 Fig. 6) or stacked slices (3, Fig. 7). With four or
    more parameters the first three are drawn and the others held at their middle measured value
    (named in the title)."""
    v = ModelView.of(model, points)
    title, formula = v.title(title), str(model)
    if len(v.shown) == 1:
        return line(v.f, v.shown[0], v.points, "measured", formula, model.adj_r2, path, title, unit)
    draw = contour if len(v.shown) == 2 else slices
    return draw(v.f, v.shown, v.points, formula, model.adj_r2, path, title, unit)


def _read_study_models(models_json: PathLike, predictions: PathLike):
    """[(entry, Model, its predictions)] of a study, in the order of models.json."""
    entries = json.loads(Path(models_json).read_text())
    try:
        pred = pd.read_csv(predictions)
    except pd.errors.EmptyDataError:
        pred = pd.DataFrame(columns=["region", "metric"])
    return [(e, Model.from_dict(e["model"]),
             pred[(pred["region"] == e["region"]) & (pred["metric"] == e["metric"])].reset_index(drop=True))
            for e in entries]


def _model_title(study: str, e: dict, model: Model) -> str:
    return f"{study}: {e['metric']} of region {e['region']} ({', '.join(model.param_names)})"


def model_figures(models_json: PathLike, predictions: PathLike, out_dir: PathLike, study: str) -> list[Path]:
    """Every model of a study as a figure, plus its model-vs-measurement figure; returns the PNG paths.

    Names: ``<metric>__<region>.png`` and ``<metric>__<region>__vs_measurement.png``, each with its CSV."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for e, model, mine in _read_study_models(models_json, predictions):
        slug = model_slug(e["region"], e["metric"])
        title = _model_title(study, e, model)
        model_figure(model, out / f"{slug}.png", title, unit_of(e["metric"], e))
        written.append(out / f"{slug}.png")
        if len(mine):
            model_vs_measurement(mine, out / f"{slug}__vs_measurement.png", title)
            written.append(out / f"{slug}__vs_measurement.png")
    return written


SHEET_COLUMNS = 2  # models side by side on a sheet; each model: its shape and predicted vs measured
SHEET_DPI = 80  # with 6-point labels still legible; ~100 kB a study
SHEET_CELLS = 12  # grid of a 3-parameter model's slices on the sheet (flat patches keep the PNG small)


def model_sheet(models_json: PathLike, predictions: PathLike, path: PathLike, study: str) -> pd.DataFrame:
    """Every model of a study on one figure (small multiples), for the report: per model its shape
    (as :func:`model_figure` draws it) and its predictions against the measured medians, titled with
    metric, region, formula and adjusted R². One figure instead of two per model keeps the report
    small enough to send; the full-size figures stay in :func:`model_figures`' folder.

    The CSV beside the PNG lists the panels: one row per model (metric, region, model, adj_r2,
    panel = its row and column on the sheet, figure = the file name of its full-size figure)."""
    models = _read_study_models(models_json, predictions)
    apply_style()
    rows = max(1, math.ceil(len(models) / SHEET_COLUMNS))
    fig = plt.figure(figsize=(2 * SHEET_COLUMNS * 3.0, rows * 3.0), layout="constrained")
    grid = fig.add_gridspec(rows, 2 * SHEET_COLUMNS)
    index = []
    for i, (e, model, mine) in enumerate(models):
        r, c = divmod(i, SHEET_COLUMNS)
        v, unit = ModelView.of(model), unit_of(e["metric"], e)
        ax = fig.add_subplot(grid[r, 2 * c], **({"projection": "3d"} if len(v.shown) == 3 else {}))
        if len(v.shown) == 1:
            draw_line(ax, v.f, v.shown[0], v.points, "measured", unit)
        elif len(v.shown) == 2:
            draw_contour(ax, v.f, v.shown, v.points, fontsize=5)
        else:
            _, bar = draw_slices(fig, ax, v.f, v.shown, v.points, unit, cells=SHEET_CELLS)
            bar.ax.tick_params(labelsize=5)
            bar.ax.yaxis.label.set_size(6)
        name = v.title(f"{e['metric']} of {e['region']}")
        ax.set_title(_title(name, str(model), model.adj_r2, width=48), fontsize=6, loc="left")
        ax2 = fig.add_subplot(grid[r, 2 * c + 1])
        if len(mine):
            draw_predicted(ax2, mine, unit)
        ax2.set_title(f"{e['metric']} of {e['region']}: model vs measurement", fontsize=6, loc="left")
        for a in (ax, ax2):
            a.tick_params(labelsize=5)
            for label in (a.xaxis.label, a.yaxis.label, *([a.zaxis.label] if hasattr(a, "zaxis") else [])):
                label.set_size(6)
        index.append({"metric": e["metric"], "region": e["region"], "model": str(model), "adj_r2": model.adj_r2,
                      "panel": f"row {r + 1}, column {c + 1}",
                      "figure": f"{model_slug(e['region'], e['metric'])}.png"})
    if not models:
        fig.text(0.5, 0.5, f"{study}: no models (see models.csv)", ha="center")
    fig.suptitle(f"{study}: every model, its shape and its predictions against the measured medians", fontsize=8)
    data = pd.DataFrame(index, columns=["metric", "region", "model", "adj_r2", "panel", "figure"])
    save_figure(fig, path, data, dpi=SHEET_DPI)
    return data
