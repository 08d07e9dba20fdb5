"""Use fitted models: predictions at new parameter values, and the best configuration under constraints.

    from perfsweep.modeling.predict import load_model, predict, recommend
    model = load_model("results/models/T_n_p/models.json")            # region all, metric time
    predict(model, {"n": [4000, 8000], "p": 16})                      # DataFrame with 'predicted'
    recommend(model, {"n": [4000], "p": range(1, 73)}, objective="core_hours",
              constraints=["p <= 72"], min_efficiency=0.5)            # the best row

Core-hours are time * p / 3600 (p = the process-count parameter). Efficiency compares against the
smallest p of the same other parameters: E(p) = t(p_min) p_min / (t(p) p).
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import re
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from perfsweep.apps.metric_kinds import MetricKind, kind_of
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.errors import PredictError
from perfsweep.modeling.model import Model

_OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq, "=": operator.eq}


def load_model(path: str | os.PathLike[str], region: str = "all", metric: str = "time") -> Model:
    """The model of (region, metric) in a models.json; anything else than such a file is one PredictError
    line naming it (FileNotFoundError stays, for the caller to report)."""
    return load_entry(path, region, metric)[0]


def load_entry(path: str | os.PathLike[str], region: str = "all", metric: str = "time") -> tuple[Model, dict]:
    """The model of (region, metric) in a models.json and its entry there (level, validation points)."""
    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
        for e in entries:
            if e["region"] == region and e["metric"] == metric:
                return entry_model(e, path), e
        have = ", ".join(sorted({f"{e['region']}/{e['metric']}" for e in entries})) or "none"
    except IsADirectoryError:
        raise PredictError(f"{path}: is a directory, not a models.json") from None
    except UnicodeDecodeError as exc:
        raise PredictError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#x} at offset "
                           f"{exc.start}); give a models.json written by the pipeline") from None
    except PredictError:
        raise
    except ValueError as exc:  # json.JSONDecodeError and bad values in a model
        raise PredictError(f"{path}: not a valid models.json ({str(exc).splitlines()[0][:200]})") from None
    except (KeyError, TypeError, AttributeError, IndexError, ArithmeticError) as exc:
        raise PredictError(f"{path}: not a valid models.json (unexpected content: "
                           f"{type(exc).__name__} {str(exc)[:120]}); give one written by the pipeline") from None
    why = "" if entries else "; the study has no models: models.csv beside it says why"
    raise PredictError(f"{path}: no model for region {region!r}, metric {metric!r} (have: {have}{why})")


def entry_model(e: dict, path: str | os.PathLike[str]) -> Model:
    """The checked model of one entry of a models.json (read already) at ``path``: PredictError for a
    contradiction, KeyError, TypeError, ValueError ... for damage (load_entry words those)."""
    model = Model.from_dict(e["model"])
    model.processes = model.processes or e.get("processes")
    model.fixed = dict(e.get("fixed") or {})
    _check_model(model, f"{path}: region {e['region']!r}, metric {e['metric']!r}: model")
    return model


def _check_model(model: Model, where: str) -> None:
    """A loaded model whose fields contradict each other (a damaged or hand-edited models.json): one
    PredictError naming the field and its value, before any evaluation fails on it."""
    names = model.param_names
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise PredictError(f"{where}.param_names: {names!r} is not a list of distinct parameter names")
    one_by_one = [] if _sound(model, len(names)) else [
        ("", model), *((f".bootstrap[{b}]", boot) for b, boot in enumerate(model.bootstrap)),
        *((f".alternatives[{b}]", alt) for b, alt in enumerate(model.alternatives))]
    for label, m in one_by_one:
        for t, term in enumerate(m.terms):
            for f, factor in enumerate(term.factors):
                field = f"{where}{label}.terms[{t}][{f}]"
                if not 0 <= factor.param < len(names):
                    raise PredictError(f"{field}: parameter index {factor.param} is out of range (the model has "
                                       f"{len(names)} parameter(s): {', '.join(names)})")
                if factor.j < 0:
                    raise PredictError(f"{field}: log exponent {factor.j} is negative")
        if m.coefficients.ndim != 1 or len(m.coefficients) != len(m.terms) + 1:
            raise PredictError(f"{where}{label}.coefficients: {len(m.coefficients.ravel())} value(s) for "
                               f"{len(m.terms)} term(s) (give the constant and one per term)")
        if not np.all(np.isfinite(m.coefficients)):
            raise PredictError(f"{where}{label}.coefficients: {m.coefficients.tolist()} has a value that is "
                               "not a finite number")
    for name, rate in model.extrapolation.items():
        if name not in names or not np.isfinite(rate) or rate < 0:
            raise PredictError(f"{where}.extrapolation.{name}: {rate!r} is not an error >= 0 of one of its "
                               f"parameters ({', '.join(names)})")
    if not (np.isnan(model.scatter) or model.scatter >= 0):
        raise PredictError(f"{where}.scatter: {model.scatter!r} is not a spread >= 0")
    if model.processes is not None and model.processes not in names:
        raise PredictError(f"{where}.processes: {model.processes!r} is not one of its parameters ({', '.join(names)})")
    if model.points.size and (model.points.ndim != 2 or model.points.shape[1] != len(names)):
        raise PredictError(f"{where}.points: not one value per parameter ({', '.join(names)}) per point")
    bad = {k: v for k, v in model.fixed.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
    if bad:
        k = next(iter(bad))
        raise PredictError(f"{where.removesuffix(': model')}: fixed.{k}: {bad[k]!r} is not a number")


def _sound(model: Model, count: int) -> bool:
    """Whether the terms and coefficients of the model, its resamples and its alternatives pass _check_model's
    checks, each distinct term once (compare's resamples share their terms), without naming each field as
    it goes: only where they do not pass does _check_model check them one by one, to name the field."""
    models = [model, *model.bootstrap, *model.alternatives]
    terms = {id(t): t for m in models for t in m.terms}.values()
    return (all(0 <= f.param < count and f.j >= 0 for t in terms for f in t.factors)
            and all(m.coefficients.ndim == 1 and len(m.coefficients) == len(m.terms) + 1 for m in models)
            and bool(np.all(np.isfinite(np.concatenate([m.coefficients for m in models])))))


def _grid(model: Model, values: Mapping[str, Any]) -> pd.DataFrame:
    unknown = set(values) - set(model.param_names)
    if unknown:
        raise PredictError(f"unknown parameter(s) {', '.join(sorted(unknown))}; the model has "
                           f"{', '.join(model.param_names)}")
    missing = [p for p in model.param_names if p not in values]
    if missing:
        raise PredictError(f"give a value for {', '.join(missing)}")
    axes = [np.atleast_1d(np.asarray(list(v) if isinstance(v, (range, Iterable)) and not isinstance(v, str)
                                     else [v], dtype=float)) for v in (values[p] for p in model.param_names)]
    rows = list(itertools.product(*axes))
    table = pd.DataFrame(rows, columns=model.param_names)
    if model.processes in table:  # a process count is a whole number of ranks
        p = table[model.processes]
        bad = p[~(np.isfinite(p) & (p >= 1) & (p == np.round(p)))]
        if len(bad):
            raise PredictError(f"{model.processes}={bad.iloc[0]:g} is not a process count (a whole number >= 1)")
    return table


def predict(model: Model, values: Mapping[str, Any], level: float = 0.9) -> pd.DataFrame:
    """Every combination of the given values with the model's prediction and, where the model has
    resamples (the pipeline's models do), the ``level`` interval ``low`` .. ``high``."""
    grid = _grid(model, values)
    x = grid[model.param_names].to_numpy(float)
    with np.errstate(over="ignore", invalid="ignore"):
        grid["predicted"] = model.expected(x)
        if model.bootstrap:
            grid["low"], grid["high"] = model.interval(x, level)
    bad = grid[~np.isfinite(grid["predicted"])]
    if len(bad):
        raise PredictError(f"the model {model} has no finite value at "
                           + ", ".join(f"{k}={bad.iloc[0][k]:g}" for k in model.param_names))
    return grid


def describe(model: Model, table: pd.DataFrame, metric: str = "time", level: float = 0.9,
             kind: MetricKind | None = None) -> list[str]:
    """One line per row of ``predict``: ``n = 4000, p = 4: t = 12.3 s [11.1, 13.9] (90 %, 23 % wide)``
    (the interval's width over the value), in the unit of the metric's ``kind`` (its declaration in
    models.json; None: guessed from the name)."""
    symbol = "t" if metric == "time" else metric
    unit = (kind or kind_of(metric)).suffix()
    lines = []
    for _, row in table.iterrows():
        where = ", ".join(f"{p} = {row[p]:g}" for p in model.param_names)
        text = f"{where}: {symbol} = {row['predicted']:.4g}{unit}"
        if "low" in row:
            width = (row["high"] - row["low"]) / abs(row["predicted"]) if row["predicted"] else float("nan")
            text += f" [{row['low']:.4g}, {row['high']:.4g}] ({100 * level:g} %, {100 * width:.0f} % wide)"
        lines.append(text)
    return lines


def form_note(model: Model) -> str:
    """How sure the model's form is: the share of the resamples whose model agrees with its lead order
    (modeling.lead_orders) and the most frequent other lead."""
    if not model.bootstrap:
        return f"lead {model.lead()} (no resamples: fitted without repetitions)"
    text = f"lead order agreed by {model.lead_share:.0%} of {len(model.bootstrap)} resamples: {model.lead()}"
    if model.runner_up:
        text += f"; runner-up {model.runner_up} in {model.runner_up_share:.0%}"
    return text


def parse_constraint(text: str) -> tuple[str, Any, float]:
    m = re.fullmatch(r"\s*(\w+)\s*(<=|>=|==|=|<|>)\s*([-+0-9.eE]+)\s*", text)
    if not m:
        raise PredictError(f"constraint {text!r} is not of the form NAME <= VALUE (<, >, >=, == also work)")
    return m.group(1), _OPS[m.group(2)], float(m.group(3))


def recommend(model: Model, values: Mapping[str, Any], objective: str = "time", processes: str | None = None,
              constraints: Iterable[str] = (), min_efficiency: float | None = None, upper: bool = False,
              level: float = 0.9) -> pd.DataFrame:
    """Candidates sorted by the objective (best first), with time, core-hours and efficiency.

    ``processes`` defaults to the model's own process-count parameter (stored by the pipeline), else
    p. With ``upper`` the time is the upper bound of the model's ``level`` interval (a pessimistic
    choice where the model is unsure)."""
    if objective not in ("time", "core_hours"):
        raise PredictError(f"objective {objective!r}: use time or core_hours")
    processes = processes or model.processes or PROCESS_COUNT
    table = predict(model, values, level)
    if upper:
        if "high" not in table:
            raise PredictError("the model has no resamples, so no upper bound (fit it with repetitions)")
        table = table.rename(columns={"predicted": "predicted_mean"}).rename(columns={"high": "time"})
    else:
        table = table.rename(columns={"predicted": "time"})
    # a study that held the process count fixed ran every configuration with that many
    p = table[processes] if processes in table else pd.Series(float(model.fixed.get(processes, 1)), index=table.index)
    table["core_hours"] = table["time"] * p / 3600.0
    if processes in table:
        # relative to the smallest process count measured (as the metrics stage's scaling table), so
        # that a candidate's efficiency does not depend on which other candidates are listed
        column = model.param_names.index(processes)
        measured = np.asarray(model.points, dtype=float)
        known = measured.ndim == 2 and len(measured) > 0  # a model written by the pipeline has its points
        p_ref = float(measured[:, column].min() if known else table[processes].min())
        x = table[model.param_names].to_numpy(float, copy=True)
        x[:, column] = p_ref
        with np.errstate(over="ignore", invalid="ignore"):
            t_ref = model.interval(x, level)[1] if upper else model.expected(x)
        table["efficiency"] = t_ref * p_ref / (table["time"] * table[processes])
        table.attrs["efficiency_reference"] = f"{processes} = {p_ref:g} (the smallest {'measured' if known else 'candidate'})"
    for text in constraints:
        name, op, value = parse_constraint(text)
        if name not in table:
            raise PredictError(f"constraint on unknown column {name!r} (have: {', '.join(table.columns)})")
        table = table[op(table[name], value)]
    if min_efficiency is not None:
        if "efficiency" not in table:
            raise PredictError(f"--min-efficiency: the model has no process count {processes!r} "
                               f"(parameters: {', '.join(model.param_names)}), so no efficiency")
        table = table[table["efficiency"] >= min_efficiency]
    if table.empty:
        raise PredictError("no candidate satisfies the constraints")
    table = table[table["time"] > 0]
    if table.empty:
        raise PredictError(f"the model {model} predicts no positive time at any candidate")
    return table.sort_values(objective, kind="stable").reset_index(drop=True)
