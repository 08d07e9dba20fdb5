"""Stage model_sheet: every model of a study on one sheet, what the HTML report shows (the models of
stage model_figures, one PNG each, only a zip report carries)."""

from __future__ import annotations

from perfsweep.plots import models as model_plots
from perfsweep.values import PathLike


def run(models_json: PathLike, predictions: PathLike, study: str, sheet: PathLike) -> None:
    """The sheet of every model of ``study`` (shape, predicted vs measured; its CSV lists them)."""
    model_plots.model_sheet(models_json, predictions, sheet, study=study)
