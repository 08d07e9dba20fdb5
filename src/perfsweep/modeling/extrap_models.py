"""PMNF models of every call path and metric of an Extra-P input.

    perfsweep models relearn_2p_text.txt                 # text, JSON, JSON Lines or a CUBE directory
    perfsweep models mm_cube_1p --out models/mm          # also writes models.{csv,md,tex} and models.json

``models.json`` has the pipeline's layout, so ``perfsweep predict models/mm/models.json x=4000 --region
main --metric time`` evaluates a model. In Python::

    from perfsweep.modeling.extrap_models import fit_extrap
    table, entries = fit_extrap("relearn_2p_text.txt")
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.errors import ModelingError, UserError
from perfsweep.modeling.extrap_io import read_extrap
from perfsweep.modeling.fit import FitOptions, fit_models
from perfsweep.values import PathLike


def fit_extrap(path: PathLike, options: FitOptions | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Read ``path`` and fit one model per (region, metric), all at once; returns (table, JSON entries).

    A (region, metric) whose values are not all positive gets no model, only a reason."""
    df, params = read_extrap(path)
    points = df[params].drop_duplicates().to_numpy(float)
    rows, todo = [], []
    for (region, metric), g in df.groupby(["region", "metric"], sort=False):
        row = {"region": region, "metric": metric, "model": "", "adj_r2": np.nan, "smape": np.nan,
               "n_points": len(points), "reason": ""}
        by_point = [g.loc[(g[params].to_numpy(float) == pt).all(axis=1), "value"].to_numpy(float) for pt in points]
        if any(np.any(v <= 0) for v in by_point):
            rows.append({**row, "reason": "values not all positive"})
            continue
        sizes = {len(v) for v in by_point}
        y = np.vstack(by_point) if len(sizes) == 1 else np.array([v.mean() for v in by_point])
        rows.append(row)
        todo.append((row, y))
    entries = []
    if todo:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                models = fit_models(points, [y for _, y in todo], params, options=options)
        except ModelingError as exc:
            raise UserError(f"{path}: cannot model: {exc}") from None
        for (row, _), model in zip(todo, models):
            row.update(model=str(model), adj_r2=model.adj_r2, smape=model.smape)
            entries.append({"study": Path(path).name, "region": row["region"], "metric": row["metric"],
                            "fixed": {}, "model": model.to_dict()})
    return pd.DataFrame(rows), entries
