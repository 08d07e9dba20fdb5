"""The shape of a study's run-time model over its varied parameters: a line with the measured medians
(one parameter), contours (two, seed 001 Fig. 6) or slices (three or more, Fig. 7)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from perfsweep.plots import models as model_plots
from perfsweep.plots.style import new_figure, save_figure


def model_shape(m, varied: list[str], medians: pd.DataFrame, path: str | os.PathLike[str], title: str) -> None:
    """``m`` is a :class:`perfsweep.modeling.model.Model` of the run time; ``medians`` the measured ones."""
    if len(varied) == 2:
        model_plots.contour(m.predict, varied, medians, str(m), m.adj_r2, path, title)
    elif len(varied) >= 3:
        model_plots.slices(m.predict, varied[:3], medians, str(m), m.adj_r2, path, title)
    else:
        x = np.linspace(medians[varied[0]].min(), medians[varied[0]].max(), 100)
        fig, axes = new_figure()
        axes[0, 0].plot(x, m.predict(x[:, None]), label=str(m))
        axes[0, 0].scatter(medians[varied[0]], medians["median"], c="k", s=14, label="measured medians")
        axes[0, 0].set(xlabel=varied[0], ylabel="time [s]", title=f"{title} (adj. R² {m.adj_r2:.3f})")
        axes[0, 0].legend(fontsize=7)
        save_figure(fig, path, pd.DataFrame({varied[0]: x, "model_time": m.predict(x[:, None])}))
