"""Validation points: configurations of a study beyond (or between) its grid's values, measured like
the others (config key ``validate:``) and never fitted. Each model of the study is judged by them:
its prediction against the measured median, its interval, and whether the interval covered it.

    from perfsweep.modeling import validation
    fitted, checks = validation.split(aggregate)            # the aggregate's validation column
    at = validation.evaluate(model, checks_of_the_metric, ["n", "m"], level=0.9)
    validation.summary(at)   # {"validation_points": 2, "validation_median_error": 0.07, "validation_coverage": 0.5, "validation_width": 0.3}
    validation.entries(at, ["n", "m"])                      # models.json's "validation" list
    validation.describe(entries, "time", 0.9)               # perfsweep predict's lines

Pure functions over a fitted :class:`perfsweep.modeling.model.Model` and tables.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = ["validation_points", "validation_median_error", "validation_coverage", "validation_width"]


def is_validation(table: pd.DataFrame) -> np.ndarray:
    """Which rows of a table (aggregate, medians, predictions) are validation points, as written or as
    read back from CSV; none in a table without a ``validation`` column (from before they existed)."""
    if "validation" not in table:
        return np.zeros(len(table), bool)
    return table["validation"].astype(str).str.lower().isin(["true", "1"]).to_numpy()


def split(agg: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows to fit, validation rows) of an aggregate."""
    mask = is_validation(agg)
    return agg[~mask], agg[mask]


def evaluate(model, points: pd.DataFrame, varied: list[str], level: float) -> pd.DataFrame:
    """One row per validation point (its ``median`` is the measurement): config_id, the varied
    values, measured, predicted (averaged over the model's resampled forms: Model.expected), low and
    high of the model's ``level`` interval, residual
    (measured - predicted), rel_error ((predicted - measured) / measured) and covered (low <=
    measured <= high; False without an interval)."""
    points = points[np.isfinite(points["median"].to_numpy(float))] if len(points) else points
    out = points[["config_id", *varied]].reset_index(drop=True).copy()
    measured = points["median"].to_numpy(float)
    x = points[varied].to_numpy(float).reshape(len(points), len(varied))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        predicted = model.expected(x) if len(x) else np.empty(0)
        low, high = model.interval(x, level) if len(x) else (np.empty(0), np.empty(0))
        out["measured"], out["predicted"], out["low"], out["high"] = measured, predicted, low, high
        out["residual"] = measured - predicted
        out["rel_error"] = (predicted - measured) / measured
    out["covered"] = (low <= measured) & (measured <= high)  # NaN bounds compare False
    return out


def summary(evaluated: pd.DataFrame) -> dict[str, Any]:
    """The models table's columns: how many points, the median relative error |pred - meas| / meas,
    the share of points the interval covered and the intervals' median width (high - low over the
    prediction: how wide a coverage was bought; NaN without points, or without intervals)."""
    n = len(evaluated)
    errors = np.abs(evaluated["rel_error"].to_numpy(float)) if n else np.empty(0)
    has_interval = n and np.isfinite(evaluated["low"].to_numpy(float)).any()
    return {"validation_points": n,
            "validation_median_error": float(np.median(errors)) if n else math.nan,
            "validation_coverage": float(evaluated["covered"].mean()) if has_interval else math.nan,
            "validation_width": float(np.nanmedian(_width(evaluated))) if has_interval else math.nan}


def _width(evaluated: pd.DataFrame) -> np.ndarray:
    """Per point the interval's width relative to the prediction (high - low) / |predicted|."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((evaluated["high"].to_numpy(float) - evaluated["low"].to_numpy(float))
                / np.abs(evaluated["predicted"].to_numpy(float)))


def prediction_rows(evaluated: pd.DataFrame, study: str, region: str, metric: str) -> pd.DataFrame:
    """The validation rows of predictions.csv (``validation`` True, beside the fitted rows)."""
    out = evaluated.copy()
    for i, (key, value) in enumerate((("study", study), ("region", region), ("metric", metric))):
        out.insert(i, key, value)
    out["validation"] = True
    return out


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None  # strict JSON: undefined is null


def entries(evaluated: pd.DataFrame, varied: list[str]) -> list[dict[str, Any]]:
    """models.json's ``validation`` list: [{parameters, measured, predicted, low, high, covered}]."""
    return [{"parameters": {name: _number(row[name]) for name in varied},
             **{key: _number(row[key]) for key in ("measured", "predicted", "low", "high")},
             "covered": bool(row["covered"])} for _, row in evaluated.iterrows()]


def describe(points: list[dict[str, Any]], metric: str = "time", level: float = 0.9, unit: str = "") -> list[str]:
    """One line per validation point of a models.json entry, e.g.
    ``validation n = 4000, m = 3: measured 3.21 s, predicted 3.05 s [2.81, 3.3] (90 %): covered, error -5 %``."""
    def num(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4g}"

    lines = []
    for point in points:
        where = ", ".join(f"{name} = {value:g}" for name, value in point["parameters"].items())
        measured, predicted = point["measured"], point["predicted"]
        error = (f", error {100 * (predicted - measured) / measured:+.1f} %"
                 if measured and predicted is not None else "")
        interval = (f" [{num(point['low'])}, {num(point['high'])}] ({100 * level:g} %)"
                    if point["low"] is not None else " (no interval)")
        lines.append(f"validation {where}: {metric} measured {num(measured)}{unit}, predicted {num(predicted)}{unit}"
                     f"{interval}: {'covered' if point['covered'] else 'not covered'}{error}")
    return lines
