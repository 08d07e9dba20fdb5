"""Stage model_figures: each model's own full-size figures in a folder, what a zip report carries. Only a
zip report asks for them: they were most of the post-processing's CPU time (bench/postprocessing.py);
the HTML report shows stage model_sheet's one sheet instead."""

from __future__ import annotations

from perfsweep.plots import models as model_plots
from perfsweep.values import PathLike


def run(models_json: PathLike, predictions: PathLike, study: str, figures: PathLike) -> None:
    """Each model's figure and its comparison with the measurements, one PNG (and CSV) each, in ``figures``."""
    model_plots.model_figures(models_json, predictions, figures, study=study)
