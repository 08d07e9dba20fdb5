"""Models for a study's aggregate table: one PMNF model per (region, metric), as in seed 001 Tables 2-3.

    from perfsweep.modeling.pipeline import fit_study_models
    table, models, predictions = fit_study_models(aggregate_df, "T_n_m", ["n", "m"], fixed={"d": 0.5})

Every repetition is fitted (the aggregate's ``values`` column; older aggregates without it: the
medians), so that the selection sees the noise the repetitions show. The repetitions are resampled
``bootstrap`` times and every resample modelled anew: the models table gives the share of resamples
that select the same lead terms (``lead_share``), the most frequent other lead (``runner_up``,
``runner_up_share``: where the two are close the data do not determine the form), and predictions
come with a 90 % interval (``low``, ``high``).

A sparse or adaptive design measures only a few points off its lines, and only those points tell a
product a*b from a*b + a. Its models are therefore searched with one lower-order term beside a product
(``FitOptions.extra_terms = 1``; a full grid's with two): enough for what does not grow with one
parameter at all (ljmd's work per molecule pair that no site adds: n c^3 (alpha + beta m^2)), which a
single product bends (m^(7/4) instead of m^2), and not so many that the few points off the lines
choose between them by noise. Parameters that are not counts, and counts measured at 1 other than the
process count, are searched with powers only (power_parameters). Measured with bench/designs.py on
ljmd's T(n, m, c) (README, Designs).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.config import format_value
from perfsweep.modeling import validation
from perfsweep.modeling.fit import FitOptions, ModelingError, fit_models

# the aggregate's metrics that get no model: the per-rank remainder and total (the run's time is modelled)
UNMODELLED = ("other", "total")
SPARSE_EXTRA_TERMS = 1  # lower-order terms beside a product in a sparse or adaptive design's models
BOOTSTRAP = 40  # resamples per model: enough for the lead share (+-0.08) and a 90 % interval
LEVEL = 0.9


def repetitions(sel: pd.DataFrame) -> np.ndarray:
    """N x repetitions (NaN where a point has fewer) from the ``values`` column, else the medians.
    (A cell is text, or with one repetition everywhere a number: a CSV reader then reads the column as
    numbers; str() of either splits into the values.)"""
    if "values" not in sel:
        return sel["median"].to_numpy(float)[:, None]
    rows = [[] if pd.isna(cell) else [float(v) for v in str(cell).split()] for cell in sel["values"]]
    width = max(1, max(map(len, rows)))
    return np.array([r + [np.nan] * (width - len(r)) if r else [np.nan] * width for r in rows])


def power_parameters(x, names: list[str], processes: str = PROCESS_COUNT) -> tuple[str, ...]:
    """The parameters whose models get powers only, no log2 factors:

    - a parameter with a value that is not a whole number: a quantity in a unit (a cut-off of 1.5
      sigma, a density of 0.84), not a count. x^i stays x^i in any unit (the unit goes into the
      coefficient), but log2(x) depends on it, and near 1 it is nearly 0, so x^i log2(x)^j there grows
      far faster than any of the search's powers (c^(3/4) log2(c)^2 like c^3.9 over c = 1.5-2.5);
    - a count measured at 1 (below 2), except the process count: log2(1) = 0, so a term with a log2
      factor vanishes at the smallest value, and over values from 1 it passes for a power with an
      offset (m^(3/2) log2(m) is within 8 % of m^2 - 1 over m = 2-5): the search's choice between such
      twins is the noise's. A log2(p) cost (a tree of messages) is zero in one process by nature, so
      the process count keeps its log factors.
    """
    x = np.asarray(x, dtype=float)
    return tuple(name for k, name in enumerate(names)
                 if np.any(x[:, k] != np.round(x[:, k])) or (name != processes and np.min(x[:, k]) < 2))


def fit_options(processes: str = PROCESS_COUNT, design: str = "full", bootstrap: int = BOOTSTRAP,
                points=None, names: list[str] | None = None, modeling: dict | None = None) -> FitOptions:
    """The modeler's options for a study of the design kind (full, sparse, adaptive) measured at
    ``points`` (N x len(names)): negative exponents for the process count; powers only (no log2
    factors) for the parameters power_parameters names, less the config's ``modeling: log_factors``
    and plus its ``powers_only``; one lower-order term beside a product (SPARSE_EXTRA_TERMS) unless
    the design is a full grid."""
    modeling = modeling or {}
    powers = set(power_parameters(points, names, processes) if points is not None and names else ())
    powers = (powers - set(modeling.get("log_factors", ()))) | set(modeling.get("powers_only", ()))
    powers = tuple(n for n in names or () if n in powers)
    options = FitOptions(negative_params=(processes,), power_params=powers, bootstrap=bootstrap)
    return options if design == "full" else replace(options, extra_terms=SPARSE_EXTRA_TERMS)


def fit_study_models(agg: pd.DataFrame, study: str, varied: list[str], fixed: dict[str, Any],
                     processes: str = PROCESS_COUNT, bootstrap: int = BOOTSTRAP, design: str = "full",
                     modeling: dict | None = None) -> tuple[pd.DataFrame, list[dict], pd.DataFrame]:
    """Fit every (region, metric) of the aggregate; returns (models table, JSON list, predictions).

    The (region, metric) pairs measured at the same points are fitted together (fit_models), with the
    options of the study's design kind, points and the config's ``modeling:`` (fit_options). The
    validation points (the aggregate's ``validation`` rows) are never fitted: each model is evaluated
    at them (perfsweep.modeling.validation: the table's validation_* columns, models.json's
    ``validation`` list, predictions' rows with ``validation`` True)."""
    agg, checks = validation.split(agg)
    options = fit_options(processes, design, bootstrap, agg[varied], varied, modeling)
    fixed_text = ", ".join(f"{k} = {format_value(v)}" for k, v in fixed.items())
    keys = agg[["region", "metric"]].drop_duplicates()
    keys = keys[~keys["metric"].isin(UNMODELLED)]  # the time, the ranks' phases and the app's own metrics
    rows, todo = [], {}  # todo: points -> [(row, selection, repetitions)]
    for region, metric in keys.itertuples(index=False):
        sel = agg[(agg["region"] == region) & (agg["metric"] == metric)]
        row: dict[str, Any] = {"study": study, "region": region, "metric": metric,
                               "model_name": f"{'T' if metric == 'time' else metric}({', '.join(varied)})",
                               "varied": ", ".join(varied), "fixed": fixed_text, "n_points": len(sel)}
        y = repetitions(sel)
        if np.any(np.isinf(y)) or np.any(np.all(np.isnan(y), axis=1)):
            rows.append({**row, "model": "", "reason": f"missing or infinite values in {region}/{metric}"})
            continue
        x = sel[varied].to_numpy(float)
        todo.setdefault(x.tobytes(), []).append((row, sel, y))
    models, preds = [], []
    for group in todo.values():
        x = group[0][1][varied].to_numpy(float)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = fit_models(x, [y for _, _, y in group], varied, options=options)
        except ModelingError as exc:
            rows += [{**row, "model": "", "reason": str(exc)} for row, _, _ in group]
            continue
        for (row, sel, _), model in zip(group, fitted):
            model.processes = processes if processes in varied else None
            at = validation.evaluate(model, checks[(checks["region"] == row["region"]) & (checks["metric"] == row["metric"])],
                                     varied, LEVEL)
            rows.append({**row, **validation.summary(at), "model": str(model), "latex": model.to_latex(), "adj_r2": model.adj_r2,
                         "smape": model.smape, "rss": model.rss, "cv_score": model.cv_score,
                         "lead": model.lead(), "lead_share": model.lead_share, "runner_up": model.runner_up,
                         "runner_up_share": model.runner_up_share, "reason": ""})
            models.append({"study": study, "region": row["region"], "metric": row["metric"], "fixed": fixed,
                           "design": design,
                           "processes": model.processes, "level": LEVEL, "model": model.to_dict(),
                           "validation": validation.entries(at, varied)})
            y = model.values
            pred = model.predict(x)
            low, high = model.interval(x, LEVEL)
            p = sel[["config_id", *varied]].copy()
            p.insert(0, "metric", row["metric"])
            p.insert(0, "region", row["region"])
            p.insert(0, "study", study)
            p["measured"] = y
            p["predicted"] = pred
            p["low"], p["high"] = low, high
            p["residual"] = y - pred
            with np.errstate(divide="ignore", invalid="ignore"):
                p["rel_error"] = (pred - y) / y
            p["validation"] = False
            preds.append(pd.concat([p, validation.prediction_rows(at, study, row["region"], row["metric"])],
                                   ignore_index=True) if len(at) else p)
    order = {key: i for i, key in enumerate(keys.itertuples(index=False, name=None))}
    rows.sort(key=lambda r: order[r["region"], r["metric"]])
    models.sort(key=lambda m: order[m["region"], m["metric"]])
    preds.sort(key=lambda p: order[p["region"].iat[0], p["metric"].iat[0]])
    table = pd.DataFrame(rows)
    cols = ["study", "model_name", "region", "metric", "fixed", "model", "adj_r2", "lead", "lead_share", "runner_up",
            "runner_up_share", "smape", "rss", "cv_score", "n_points", *validation.SUMMARY_COLUMNS, "varied", "latex",
            "reason"]
    table = table.reindex(columns=cols)
    return table, models, (pd.concat(preds, ignore_index=True) if preds else pd.DataFrame())
