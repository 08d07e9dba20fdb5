"""Models for a study's aggregate table: one PMNF model per (region, metric), as in seed 001 Tables 2-3.

    from perfsweep.modeling.pipeline import fit_study_models
    table, models, predictions = fit_study_models(aggregate_df, "T_n_m", ["n", "m"], fixed={"d": 0.5})
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.config import format_value
from perfsweep.modeling.fit import FitOptions, ModelingError, fit_model

# the metrics worth a model: the run's time and the per-rank phases (maximum over ranks)
METRICS = ("time", "compute", "comm", "io", "init")


def fit_study_models(agg: pd.DataFrame, study: str, varied: list[str], fixed: dict[str, Any],
                     processes: str = "p") -> tuple[pd.DataFrame, list[dict], pd.DataFrame]:
    """Fit every (region, metric) of the aggregate; returns (models table, JSON list, predictions)."""
    options = FitOptions(negative_params=(processes,))
    fixed_text = ", ".join(f"{k} = {format_value(v)}" for k, v in fixed.items())
    rows, models, preds = [], [], []
    keys = agg[["region", "metric"]].drop_duplicates()
    keys = keys[keys["metric"].isin(METRICS)]
    for region, metric in keys.itertuples(index=False):
        sel = agg[(agg["region"] == region) & (agg["metric"] == metric)]
        row: dict[str, Any] = {"study": study, "region": region, "metric": metric,
                               "model_name": f"{'T' if metric == 'time' else metric}({', '.join(varied)})",
                               "varied": ", ".join(varied), "fixed": fixed_text, "n_points": len(sel)}
        x = sel[varied].to_numpy(float)
        y = sel["median"].to_numpy(float)
        try:
            if np.any(y <= 0):
                raise ModelingError(f"non-positive medians in {region}/{metric}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = fit_model(x, y, varied, options=options)
        except ModelingError as exc:
            rows.append({**row, "model": "", "reason": str(exc)})
            continue
        rows.append({**row, "model": str(model), "latex": model.to_latex(), "adj_r2": model.adj_r2,
                     "smape": model.smape, "rss": model.rss, "cv_score": model.cv_score, "reason": ""})
        models.append({"study": study, "region": region, "metric": metric, "fixed": fixed,
                       "model": model.to_dict()})
        pred = model.predict(x)
        p = sel[["config_id", *varied]].copy()
        p.insert(0, "metric", metric)
        p.insert(0, "region", region)
        p.insert(0, "study", study)
        p["measured"] = y
        p["predicted"] = pred
        p["residual"] = y - pred
        p["rel_error"] = (pred - y) / y
        preds.append(p)
    table = pd.DataFrame(rows)
    cols = ["study", "model_name", "region", "metric", "fixed", "model", "adj_r2", "smape", "rss", "cv_score",
            "n_points", "varied", "latex", "reason"]
    table = table.reindex(columns=cols)
    return table, models, (pd.concat(preds, ignore_index=True) if preds else pd.DataFrame())
