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
from perfsweep.modeling.fit import FitOptions, ModelingError, fit_models

# the metrics worth a model: the run's time and the per-rank phases (maximum over ranks)
METRICS = ("time", "compute", "comm", "io", "init")


def fit_study_models(agg: pd.DataFrame, study: str, varied: list[str], fixed: dict[str, Any],
                     processes: str = "p") -> tuple[pd.DataFrame, list[dict], pd.DataFrame]:
    """Fit every (region, metric) of the aggregate; returns (models table, JSON list, predictions).

    The (region, metric) pairs measured at the same points are fitted together (fit_models)."""
    options = FitOptions(negative_params=(processes,))
    fixed_text = ", ".join(f"{k} = {format_value(v)}" for k, v in fixed.items())
    keys = agg[["region", "metric"]].drop_duplicates()
    keys = keys[keys["metric"].isin(METRICS)]
    rows, todo = [], {}  # todo: points -> [(row, selection)]
    for region, metric in keys.itertuples(index=False):
        sel = agg[(agg["region"] == region) & (agg["metric"] == metric)]
        row: dict[str, Any] = {"study": study, "region": region, "metric": metric,
                               "model_name": f"{'T' if metric == 'time' else metric}({', '.join(varied)})",
                               "varied": ", ".join(varied), "fixed": fixed_text, "n_points": len(sel)}
        y = sel["median"].to_numpy(float)
        if not np.all(np.isfinite(y) & (y > 0)):
            rows.append({**row, "model": "", "reason": f"non-positive or missing medians in {region}/{metric}"})
            continue
        x = sel[varied].to_numpy(float)
        todo.setdefault(x.tobytes(), []).append((row, sel))
    models, preds = [], []
    for group in todo.values():
        x = group[0][1][varied].to_numpy(float)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = fit_models(x, [sel["median"].to_numpy(float) for _, sel in group], varied, options=options)
        except ModelingError as exc:
            rows += [{**row, "model": "", "reason": str(exc)} for row, _ in group]
            continue
        for (row, sel), model in zip(group, fitted):
            rows.append({**row, "model": str(model), "latex": model.to_latex(), "adj_r2": model.adj_r2,
                         "smape": model.smape, "rss": model.rss, "cv_score": model.cv_score, "reason": ""})
            models.append({"study": study, "region": row["region"], "metric": row["metric"], "fixed": fixed,
                           "model": model.to_dict()})
            y = model.values
            pred = model.predict(x)
            p = sel[["config_id", *varied]].copy()
            p.insert(0, "metric", row["metric"])
            p.insert(0, "region", row["region"])
            p.insert(0, "study", study)
            p["measured"] = y
            p["predicted"] = pred
            p["residual"] = y - pred
            p["rel_error"] = (pred - y) / y
            preds.append(p)
    order = {key: i for i, key in enumerate(keys.itertuples(index=False, name=None))}
    rows.sort(key=lambda r: order[r["region"], r["metric"]])
    models.sort(key=lambda m: order[m["region"], m["metric"]])
    preds.sort(key=lambda p: order[p["region"].iat[0], p["metric"].iat[0]])
    table = pd.DataFrame(rows)
    cols = ["study", "model_name", "region", "metric", "fixed", "model", "adj_r2", "smape", "rss", "cv_score",
            "n_points", "varied", "latex", "reason"]
    table = table.reindex(columns=cols)
    return table, models, (pd.concat(preds, ignore_index=True) if preds else pd.DataFrame())
