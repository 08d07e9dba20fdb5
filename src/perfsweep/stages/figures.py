"""Stage figures: a study's figures (seed 001 Figs. 4, 6, 7 and Table 1 as a figure), each with its
data as CSV beside it: time vs each varied parameter, the measured grid, the variability, the run-time
model's shape and model vs measurement."""

from __future__ import annotations

import json
from pathlib import Path

from perfsweep.modeling.model import Model
from perfsweep.modeling.validation import is_validation
from perfsweep.plots import grid as grid_plot
from perfsweep.plots import models as model_plots
from perfsweep.plots.style import placeholder
from perfsweep.plots.sweep import time_vs_parameters as sweep_plot
from perfsweep.plots.variability import variability_figure as var_plot
from perfsweep.stages import PathLike, read


def run(runs: PathLike, medians: PathLike, variability: PathLike, predictions: PathLike, models_json: PathLike,
        time_vs_parameters: PathLike, grid: PathLike, variability_figure: PathLike, model: PathLike,
        model_vs_measurement: PathLike, varied: list[str], study: str) -> None:
    med, var = read(medians), read(variability)
    sweep_plot(read(runs), med, varied, study, time_vs_parameters)
    grid_plot.measured_grid(med, var, varied, study, grid)
    var_plot(var, study, variability_figure)
    entry = next((e for e in json.loads(Path(models_json).read_text())
                  if e["region"] == "all" and e["metric"] == "time"), None)
    pred = read(predictions)
    pred = pred[(pred["region"] == "all") & (pred["metric"] == "time")] if len(pred) else pred
    if entry is None:  # no model (e.g. too few values): say so in the figures instead of failing the sweep
        for path in (model, model_vs_measurement):
            placeholder(path, f"{study}: no run-time model (see models.csv)")
        return
    m = Model.from_dict(entry["model"])
    title = f"{study}: T({', '.join(varied)})"
    fitted = med[~is_validation(med)]  # the model's shape over the points it was fitted to
    model_plots.model_figure(m, model, title, points=fitted[[*varied, "median"]].rename(columns={"median": "measured"}))
    model_plots.model_vs_measurement(pred, model_vs_measurement, title)
