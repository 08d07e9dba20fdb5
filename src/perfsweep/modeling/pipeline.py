"""Models for a study's aggregate table: one PMNF model per (region, metric), as in seed 001 Tables 2-3.

    from perfsweep.modeling.pipeline import fit_study_models
    table, models, predictions = fit_study_models(aggregate_df, "T_n_m", ["n", "m"], fixed={"d": 0.5})

Every repetition is fitted (the aggregate's ``values`` column; older aggregates without it: the
medians), so that the selection sees the noise the repetitions show. The repetitions are resampled
``bootstrap`` times and every resample modelled anew; the reported model is one the resamples agree
with (modeling.consensus). The models table gives the share of the resamples whose model agrees with
its lead order (``lead_share``), the most frequent other lead (``runner_up``, ``runner_up_share``),
``notes`` on what a reader must know (a form fewer than half of the resamples agree with, a negative
constant, a fit worse than the mean, oversubscribed process counts, an assumed form in p: model_flags),
and predictions come with the 90 % interval of a new measurement (``low``, ``high``).

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
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.apps.metric_kinds import MetricKind, kind_of
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.errors import ModelingError
from perfsweep.modeling import validation
from perfsweep.modeling.consensus import NEGATIVE
from perfsweep.modeling.fit import MIN_VALUES, FitOptions, fit_models
from perfsweep.modeling.model import Model, fill_statistics
from perfsweep.stats import DISTURBED_CONFIGURATION
from perfsweep.values import format_value

# the aggregate's metrics that get no model: the per-rank remainder and total (the run's time is modelled)
UNMODELLED = ("other", "total")
SPARSE_EXTRA_TERMS = 1  # lower-order terms beside a product in a sparse or adaptive design's models
# resamples per model: the lead share to +-0.04, and the prediction averaged over the resamples' forms
# (Model.expected) to 1/sqrt(160), 8 % of their spread (40: 16 %; on the committed quiet replicate
# sweeps the three sweeps' averaged predictions lay within 10 % at 16 of 18 points with 40, 17 with 160:
# bench/bagging.py)
BOOTSTRAP = 160
# the decide step's fits between rounds: the lead share to +-0.08; they steer, and near the level BOOTSTRAP decides
ROUND_BOOTSTRAP = 40
LEVEL = 0.9
UNDECIDED = 0.5  # a lead order fewer resamples agree with is flagged: the data do not decide the form


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
    and plus its ``powers_only``; its ``simplest_within`` (modeling.consensus); one lower-order term
    beside a product (SPARSE_EXTRA_TERMS) unless the design is a full grid."""
    modeling = modeling or {}
    powers = set(power_parameters(points, names, processes) if points is not None and names else ())
    powers = (powers - set(modeling.get("log_factors", ()))) | set(modeling.get("powers_only", ()))
    powers = tuple(n for n in names or () if n in powers)
    options = FitOptions(negative_params=(processes,), power_params=powers, bootstrap=bootstrap,
                         simplest_within=float(modeling.get("simplest_within", 0.0)))
    return options if design == "full" else replace(options, extra_terms=SPARSE_EXTRA_TERMS)


def fit_study_models(agg: pd.DataFrame, study: str, varied: list[str], fixed: dict[str, Any],
                     processes: str = PROCESS_COUNT, bootstrap: int = BOOTSTRAP, design: str = "full",
                     modeling: dict | None = None) -> tuple[pd.DataFrame, list[dict], pd.DataFrame]:
    """Fit every (region, metric) of the aggregate; returns (models table, JSON list, predictions).

    The (region, metric) pairs measured at the same points are fitted together (fit_models), with the
    options of the study's design kind, points and the config's ``modeling:`` (fit_options). The
    validation points (the aggregate's ``validation`` rows) are never fitted: each model is evaluated
    at them (perfsweep.modeling.validation: the table's validation_* columns, models.json's
    ``validation`` list, predictions' rows with ``validation`` True). Configurations whose ranks
    outnumber the cores they had (the aggregate's ``oversubscribed``) are not fitted either: their
    predictions are reported beside (``oversubscribed`` True, measured against the model of the cores'
    regime). Where that leaves fewer than MIN_VALUES values of the process count, its form is assumed
    (_forms_in_p: p^-1 where a set falls with p, log2(p) where it grows), and the table says so. A
    rate (a metric whose ``better`` is higher: the aggregate's ``unit`` and ``better`` columns, else
    guessed from the name, perfsweep.apps.metric_kinds) that falls as a parameter grows is modelled
    through its reciprocal where that predicts better (_fit_sets, reciprocal_wins). The table's rows
    and models.json's entries carry each metric's ``unit`` and ``better``."""
    agg, checks = validation.split(agg)
    over = oversubscribed_rows(agg, processes, varied)
    fit_agg = agg[~over]
    options = fit_options(processes, design, bootstrap, fit_agg[varied], varied, modeling)
    notes, few = _oversubscribed_notes(agg, over, processes, varied)
    keys = agg[["region", "metric"]].drop_duplicates()
    keys = keys[~keys["metric"].isin(UNMODELLED)]  # the time, the ranks' phases and the app's own metrics
    kinds = kinds_of(agg)
    rows, todo = _measurement_sets(fit_agg, keys, study, varied, fixed)
    rows = [{**r, **kinds[r["metric"]].fields()} for r in rows]
    models, preds = [], []
    for whole in todo.values():
        x = whole[0][1][varied].to_numpy(float)
        batch = replace(options, drift=drift_points(whole[0][1]))
        for row, sel, model, note, error in _fit_sets(x, whole, varied, processes, few, batch, kinds):
            kind = kinds[row["metric"]]
            row.update(kind.fields())
            if model is None:
                rows.append({**row, "model": "", "reason": error})
                continue
            model.processes = processes if processes in varied else None
            other = agg[over & (agg["region"] == row["region"]) & (agg["metric"] == row["metric"])]
            flags = notes + ([note] if note else []) + model_flags(model, kind)
            at = validation.evaluate(model, checks[(checks["region"] == row["region"]) & (checks["metric"] == row["metric"])],
                                     varied, LEVEL)
            rows.append(_table_row(row, model, at, flags, other, varied))
            models.append({"study": study, "region": row["region"], "metric": row["metric"], **kind.fields(),
                           "fixed": fixed, "design": design, "notes": flags,
                           "processes": model.processes, "level": LEVEL, "model": model.to_dict(),
                           "validation": validation.entries(at, varied)})
            preds += _all_predictions(model, sel, other, at, study, row, varied)
    return _in_key_order(keys, rows, models, preds)


def drift_points(sel: pd.DataFrame) -> tuple[bool, ...] | None:
    """Per configuration of ``sel`` (a measurement set's rows) whether the host may have moved its mean by
    more than its repetitions show (FitOptions.drift): where its runs' host load is unknown (no
    ``others_busy_share``: records without host_load, an aggregate from elsewhere) or its median comes
    from disturbed runs (``disturbed_ok_share`` above DISTURBED_CONFIGURATION, perfsweep.tables). A
    quiet host's configurations are measured in rounds, their repetitions at different times, so
    their repetitions show its drift. None where no configuration is known quiet (every point)."""
    if "others_busy_share" not in sel or "disturbed_ok_share" not in sel:
        return None
    known = pd.to_numeric(sel["others_busy_share"], errors="coerce").notna()
    quiet = known & (pd.to_numeric(sel["disturbed_ok_share"], errors="coerce") <= DISTURBED_CONFIGURATION)
    return tuple(bool(q) for q in ~quiet) if quiet.any() else None


def _oversubscribed_notes(agg: pd.DataFrame, over: pd.Series, processes: str,
                          varied: list[str]) -> tuple[list[str], str | None]:
    """The note every model of the study gets where configurations were oversubscribed (not fitted),
    and why the form in p is assumed (_forms_in_p's ``few``) where that leaves MIN_VALUES - 1 values
    of the process count (None: it is searched)."""
    notes = []
    if over.any():
        values = sorted(set(agg.loc[over, processes]))
        notes.append(f"{processes} = {', '.join(format_value(v) for v in values)} oversubscribed (more ranks than "
                     "cores): not fitted, measured against the model beside it")
    fit_agg = agg[~over]
    few = (f"{MIN_VALUES - 1} values" + (" within the cores" if over.any() else "")
           if processes in varied and fit_agg[processes].nunique() == MIN_VALUES - 1 else None)
    return notes, few


def _measurement_sets(fit_agg: pd.DataFrame, keys: pd.DataFrame, study: str, varied: list[str],
                      fixed: dict[str, Any]) -> tuple[list[dict], dict]:
    """The table rows of the (region, metric) pairs that cannot be fitted (missing or infinite
    values), and the others by their points: points -> [(table row, selection, repetitions)]."""
    fixed_text = ", ".join(f"{k} = {format_value(v)}" for k, v in fixed.items())
    rows, todo = [], {}
    for region, metric in keys.itertuples(index=False):
        sel = fit_agg[(fit_agg["region"] == region) & (fit_agg["metric"] == metric)]
        row: dict[str, Any] = {"study": study, "region": region, "metric": metric,
                               "model_name": f"{'T' if metric == 'time' else metric}({', '.join(varied)})",
                               "varied": ", ".join(varied), "fixed": fixed_text, "n_points": len(sel)}
        y = repetitions(sel)
        if not len(sel) or np.any(np.isinf(y)) or np.any(np.all(np.isnan(y), axis=1)):
            rows.append({**row, "model": "", "reason": f"missing or infinite values in {region}/{metric}"})
            continue
        x = sel[varied].to_numpy(float)
        todo.setdefault(x.tobytes(), []).append((row, sel, y))
    return rows, todo


def _table_row(row: dict, model: Model, at: pd.DataFrame, flags: list[str], other: pd.DataFrame,
               varied: list[str]) -> dict:
    """The models table's row of a fitted model (``at``: its validation points, ``other``: the
    oversubscribed configurations of its region and metric)."""
    return {**row, **validation.summary(at), "model": str(model), "latex": model.to_latex(), "adj_r2": model.adj_r2,
            "smape": model.smape, "rss": model.rss, "cv_score": model.cv_score,
            "lead": model.lead(), "lead_share": model.lead_share, "runner_up": model.runner_up,
            "runner_up_share": model.runner_up_share, "notes": "; ".join(flags),
            "oversubscribed": _slowdown(model, other, varied), "reason": ""}


def _all_predictions(model: Model, sel: pd.DataFrame, other: pd.DataFrame, at: pd.DataFrame, study: str,
                     row: dict, varied: list[str]) -> list[pd.DataFrame]:
    """The model's predictions at its fitted points, its oversubscribed configurations and its
    validation points (the frames that have rows)."""
    preds = [_predictions(model, sel, study, row, varied, oversubscribed=False)]
    if len(other):
        preds.append(_predictions(model, other, study, row, varied, oversubscribed=True))
    if len(at):
        preds.append(validation.prediction_rows(at, study, row["region"], row["metric"]))
    return preds


def _in_key_order(keys: pd.DataFrame, rows: list[dict], models: list[dict],
                  preds: list[pd.DataFrame]) -> tuple[pd.DataFrame, list[dict], pd.DataFrame]:
    """The models table, JSON list and predictions in the aggregate's order of (region, metric)."""
    order = {key: i for i, key in enumerate(keys.itertuples(index=False, name=None))}
    rows.sort(key=lambda r: order[r["region"], r["metric"]])
    models.sort(key=lambda m: order[m["region"], m["metric"]])
    preds.sort(key=lambda p: order[p["region"].iat[0], p["metric"].iat[0]])
    table = pd.DataFrame(rows)
    cols = ["study", "model_name", "region", "metric", "unit", "better", "fixed", "model", "adj_r2", "lead", "lead_share", "runner_up",
            "runner_up_share", "notes", "oversubscribed", "smape", "rss", "cv_score", "n_points",
            *validation.SUMMARY_COLUMNS, "varied", "latex",
            "reason"]
    table = table.reindex(columns=cols)
    return table, models, (pd.concat(preds, ignore_index=True) if preds else pd.DataFrame())


def oversubscribed_rows(agg: pd.DataFrame, processes: str, varied: list[str]) -> pd.Series:
    """Rows of configurations whose ranks outnumbered their cores (the aggregate's ``oversubscribed``,
    from the run records), where the process count is varied and some configurations were not."""
    if "oversubscribed" not in agg or processes not in varied:
        return pd.Series(False, index=agg.index)
    over = agg["oversubscribed"].astype(str).str.lower().isin(("true", "1"))
    return over if not over.all() else pd.Series(False, index=agg.index)


def _forms_in_p(x: np.ndarray, group: list, varied: list[str], processes: str, few: str | None) -> list:
    """The group's sets with the form in p they are fitted with: (sets, FitOptions.assumed, note).
    With enough process counts the search chooses it (one entry, nothing assumed). With two (``few``:
    why) it is assumed from how each set changes from the smaller to the larger count (the median over
    the other parameters' values): falling, p^-1 (Amdahl's law: a serial part and one divided among the
    ranks); growing (communication, waiting), log2(p) (a collective's tree), as p^-1 would need a
    negative coefficient to grow and predicts worse than the mean."""
    if few is None:
        return [(group, (), None)]
    k = varied.index(processes)
    lo, hi = np.min(x[:, k]), np.max(x[:, k])
    rest = [i for i in range(len(varied)) if i != k]
    key = [tuple(row) for row in x[:, rest]]
    at = {(key[i], x[i, k]): i for i in range(len(x))}  # the same points for every set of the group
    pairs = [(at[c, lo], at[c, hi]) for c in set(key) if (c, lo) in at and (c, hi) in at]
    falls, grows = [], []
    for entry in group:
        means = np.nanmean(entry[2], axis=1)
        changes = [np.sign(means[b] - means[a]) for a, b in pairs]
        (grows if np.median(changes or [-1]) > 0 else falls).append(entry)
    p = processes
    return [(sets, ((p, (form,)),), f"form in {p} assumed {text} ({few})")
            for sets, form, text in ((falls, (Fraction(-1), 0), f"{p}^-1, Amdahl's law"),
                                     (grows, (Fraction(0), 1), f"log2({p}): grows with {p}")) if sets]


def kinds_of(agg: pd.DataFrame) -> dict[str, MetricKind]:
    """Each metric's kind (unit, which way is better) as the aggregate's ``unit`` and ``better`` columns
    declare it; an aggregate written before them: guessed from the name (perfsweep.apps.metric_kinds)."""
    first = agg.drop_duplicates("metric")
    return {m: kind_of(m, row=r) for m, r in zip(first["metric"], first.to_dict("records"))}


def _fit_sets(x: np.ndarray, whole: list, varied: list[str], processes: str, few: str | None,
              options: FitOptions, kinds: dict[str, MetricKind]) -> list[tuple]:
    """The models of a group of measurement sets on the same points: (row, selection, model or None,
    note on the form in p or None, why no model or None) per set. A metric whose higher values are
    better (a rate: steps/s, GFLOP/s), positive, is fitted both as it is and through its reciprocal
    (the time per unit of work), each with the form in p its own values show (_forms_in_p: a rate grows
    with p where its reciprocal falls), and keeps the one that predicts better (reciprocal_wins)."""
    direct = _fit_batches(x, whole, varied, processes, few, options)
    rates = [(row, sel, 1.0 / y) for row, sel, y in whole
             if kinds[row["metric"]].higher_is_better and np.nanmin(y) > 0]
    inverse = _fit_batches(x, rates, varied, processes, few, options)
    out = []
    for row, sel, y in whole:
        model, note, error = direct[id(row)]
        inv, inv_note, _ = inverse.get(id(row), (None, None, None))
        if inv is not None and (model is None or reciprocal_wins(model, inv)):
            inv.reciprocal = True
            for b in (*inv.bootstrap, *inv.alternatives):
                b.reciprocal = True
            inv.values = np.nanmean(y, axis=1)
            fill_statistics(inv, inv.values, inv.predict(x))
            model, note, error = inv, inv_note, None
        out.append((row, sel, model, note, None if model is not None else error or "no model"))
    return out


def _fit_batches(x: np.ndarray, group: list, varied: list[str], processes: str, few: str | None,
                 options: FitOptions) -> dict[int, tuple]:
    """id(row) -> (model or None, note on the form in p, why no model) of every set of ``group``, fitted
    in batches of the same form in p (_forms_in_p)."""
    out: dict[int, tuple] = {}
    for sets, assumed, note in _forms_in_p(x, group, varied, processes, few) if group else []:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = fit_models(x, [y for _, _, y in sets], varied,
                                    options=replace(options, assumed=assumed) if assumed else options)
        except ModelingError as exc:
            out.update({id(row): (None, note, str(exc)) for row, _, _ in sets})
            continue
        out.update({id(row): (model, note, None) for (row, _, _), model in zip(sets, fitted)})
    return out


def reciprocal_wins(direct: Model, inverse: Model) -> bool:
    """Whether the model of 1/y (``inverse``) predicts y better than the model of y (``direct``):
    both leave-one-out scores are relative squared errors, and those of 1/y and y are the same to first
    order. A rate that falls like 1/s^3 has no positive PMNF model (every term a cost grows), its
    reciprocal (the time per unit of work) has."""
    return bool(np.isfinite(inverse.cv_score) and not inverse.cv_score >= direct.cv_score)


def model_flags(model: Model, kind: MetricKind) -> list[str]:
    """What a reader must know before using the model: a form the resamples do not agree on, a
    negative constant in a time model, a fit worse than the constant."""
    flags = []
    if model.bootstrap and model.lead_share < UNDECIDED:
        runner = f" or {model.runner_up} ({model.runner_up_share:.0%})" if model.runner_up else ""
        flags.append(f"form undecided: {model.lead()} ({model.lead_share:.0%} of the resamples){runner}")
    smallest = float(np.min(model.values)) if len(model.values) else float("nan")
    if kind.is_time and not model.reciprocal and model.coefficients[0] < -NEGATIVE * smallest:
        flags.append(f"negative constant {model.coefficients[0]:.3g} (below -{NEGATIVE:.0%} of the smallest "
                     f"mean {smallest:.3g})")
    if model.adj_r2 < 0:
        flags.append(f"adj. R^2 {model.adj_r2:.2f}: predicts worse than the mean")
    return flags


def _slowdown(model: Model, other: pd.DataFrame, varied: list[str]) -> str:
    """'p = 3: 1.52x, p = 4: 2.10x': the oversubscribed configurations' medians against the model."""
    if not len(other):
        return ""
    ratio = other["median"].to_numpy(float) / model.predict(other[varied].to_numpy(float))
    frame = other.assign(ratio=ratio).groupby(model.processes or varied[-1])["ratio"].median()
    return ", ".join(f"{model.processes} = {format_value(k)}: {v:.2f}x" for k, v in frame.items())


def _predictions(model: Model, sel: pd.DataFrame, study: str, row: dict, varied: list[str],
                 oversubscribed: bool) -> pd.DataFrame:
    x = sel[varied].to_numpy(float)
    p = sel[["config_id", *varied]].copy()
    p.insert(0, "metric", row["metric"])
    p.insert(0, "region", row["region"])
    p.insert(0, "study", study)
    p["measured"] = model.values if not oversubscribed else sel["median"].to_numpy(float)
    p["predicted"] = model.expected(x)
    p["low"], p["high"] = model.interval(x, LEVEL)
    p["residual"] = p["measured"] - p["predicted"]
    with np.errstate(divide="ignore", invalid="ignore"):
        p["rel_error"] = (p["predicted"] - p["measured"]) / p["measured"]
    p["oversubscribed"] = oversubscribed
    p["validation"] = False
    return p
