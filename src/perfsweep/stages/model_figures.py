"""Stage model_figures: every model of a study on one sheet (what the HTML report shows) and each
model's own figures in a folder (what a zip report carries)."""

from __future__ import annotations

from perfsweep.plots import models as model_plots
from perfsweep.stages import PathLike


def run(models_json: PathLike, predictions: PathLike, sheet: PathLike, figures: PathLike, study: str) -> None:
    model_plots.model_figures(models_json, predictions, figures, study=study)
    model_plots.model_sheet(models_json, predictions, sheet, study=study)
