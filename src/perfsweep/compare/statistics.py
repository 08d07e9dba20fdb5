"""The statistics of a row of ``perfsweep compare``: each one function of the :class:`Pair` (one study,
region and metric of both sweeps at the target) returning its columns, all listed in ``STATISTICS``.

A row's columns are what the functions in ``STATISTICS`` return, in that order, merged: the names of
:class:`~perfsweep.compare.judge.Row`'s fields fill those fields (and the verdict reads them); any
other name is a column of its own (``Row.extra``), written after the built-in ones by every format
(``--format csv``, ``json``; text and md before ``notes``; the HTML page's table). A ``notes`` list
is added to the row's notes. Two statistics may not return the same name. Adding a statistic is a
function here and its name in ``STATISTICS`` (docs/how-to/compare-sweeps.md, "How to add a statistic").

- **ratio** (:func:`ratio`): B/A of the two models' predictions at the target (``--at``; default per
  study: the largest configuration both sweeps measured, else the largest values both ranges reach),
  with its ``level`` interval from the resampled models both sweeps carry (the pipeline's resamples of
  the repetitions, each modelled anew, form chosen included, with the scatter between configurations
  that the repetitions do not show: modeling.consensus): log B/A is taken as normal with the variance
  of log A's plus log B's resampled predictions (the two sweeps are independent). Adding each model's
  ``scatter`` once more (the interval of two new measurements) counted it twice: on four pairs of
  tiny ljmd sweeps under a load of 6-12 on 2 cores it left a region slowed by 20 % inconclusive
  ([1.10, 1.80] where it is [1.21, 1.63] without), and the replicate pairs gave no false alarm
  either way. Using the stored resamples costs one evaluation per resample and keeps 1,000 call
  paths within seconds (bench/compare_scale.py); refitting both sweeps per resample would cost minutes.
  **Paired** (the variants of one sweep, config key ``variants:``, measured back to back in every round):
  the ratio comes from the pairs of runs themselves (perfsweep.compare.paired: their log ratios, one
  ratio everywhere or its trend in the parameters, a robust fit, Student's t), in which the host's
  drift, common to both runs of a pair, cancels; the impact is that ratio's change of A's prediction.
  (Pairing the variants' resampled models instead, drawn from the same rounds, gave the whole run of a
  tiny ljmd sweep under a load of 2 an mde of 17 % against 3 %: each variant's model moves its means by
  a scatter of its own, fit_resample's excess, which does not cancel.) Where the aggregates carry no
  repetitions the row is judged as two sweeps, and its note says so.
- **share** (:func:`share`) of the row at the target: its larger prediction over the total time
  (region ``all``'s time where the side has it, else the sum of the regions' times; for a metric that
  is not a time, the total of that metric); **impact**: the change B - A over A's total, by which the
  table is sorted.
- **scaling class** (:func:`scaling`): the lead orders per parameter of A's and B's reported model
  (modeling.lead_orders.lead_orders) and their *class*: ``same`` where they have the same lead
  terms (lead_orders.same_lead_order: every parameter, falling factors, sums apart from products);
  where they do not, ``worse`` (B grows faster in some parameter by more than
  lead_orders.EXPONENT_TOLERANCE and slower in none; for a rate, falls faster), ``better``, or
  ``changed`` (faster in one, slower in another) only where the change is *confident*: both sides
  have resamples (until issue 44 also a lead share of lead_orders.STABLE, which by the strict rule
  a noisy sweep's sure change of growth seldom has), and in the parameter that changed (B's reported model growing faster, or slower, than A's by more than the
  tolerance) B's resampled models grow faster (slower) than A's in at least 95 % of the pairs of
  resamples (A's i, B's j), the growth measured over the range both sweeps measured (lead_orders.growth).
  Otherwise ``class uncertain``: the resamples of the two sweeps overlap in form.
  (A first rule, fewer than lead_orders.SUPPORT of either side's resamples reaching the other's lead
  order, left the n^2 pass of ljmd --all-pairs uncertain where 15 % of the noisy "before" sweep's
  resamples reached n^(3/2) log2(n)^2, and called two replicate sweeps' n^(2/3) log2(n)^2 and n^(3/2)
  a confident change at 5 %.)

The verdict's test (:mod:`perfsweep.compare.judge` applies it to every gating row together):
:func:`threshold_p_value` (the two one-sided tests of "beyond the threshold" on the ratio's log and
``se``), :func:`detectable` (the row's minimum detectable effect) and :func:`holm` (the correction over
every gating test: the ratios' and the scaling classes').
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

from perfsweep.compare.load import Entry
from perfsweep.modeling import lead_orders as lead
from perfsweep.modeling.model import Model


@dataclass(frozen=True)
class Pair:
    """One study, region and metric of both sweeps, at the target: what every statistic sees."""
    study: str
    region: str
    metric: str
    a: Entry
    b: Entry
    names: list[str]  # B's parameter names (the target's order)
    order: list[int]  # per parameter of B, A's column
    target: np.ndarray  # in B's parameter order
    predicted_a: float  # A's model at the target (in A's parameter order)
    predicted_b: float
    resampled_a: np.ndarray  # A's resampled models at the target
    resampled_b: np.ndarray
    total_a: float  # the total of the row's metric at the target (NaN: none)
    total_b: float
    level: float  # of the intervals
    threshold: float  # smallest change that counts
    paired: bool = False  # a paired measurement's variants (load.load_paired)
    # paired: the pairs of runs' log ratio at the target, its se, df and note (compare.paired; None: not at hand)
    paired_fit: tuple[float, float, float, str] | None = None


def predict_at(model: Model, x: np.ndarray, cache: dict | None = None) -> float:
    """The model at one point ``x``; each term evaluated once per ``cache`` (resamples share terms)."""
    cache = {} if cache is None else cache
    total = float(model.coefficients[0])
    for c, term in zip(model.coefficients[1:], model.terms):
        value = cache.get(id(term))  # (the terms outlive the cache)
        if value is None:
            with np.errstate(all="ignore"):
                value = cache[id(term)] = float(term.values(x[None])[0])
        total += float(c) * value
    return (1.0 / total if total else math.inf) if model.reciprocal else total


def resampled(model: Model, x: np.ndarray) -> np.ndarray:
    """The model's resampled models at one point ``x``."""
    cache: dict = {}
    return np.array([predict_at(b, x, cache) for b in model.bootstrap])


# --- the statistics ----------------------------------------------------------------------------------------------


def ratio(pair: Pair) -> dict[str, Any]:
    """B/A at the target and its ``level`` interval; ``se``: the standard error of log B/A; paired: from
    the pairs of runs (perfsweep.compare.paired), with its degrees of freedom ``df``."""
    ea, eb = pair.a, pair.b
    if pair.paired_fit is not None:
        log_r, se, df, note = pair.paired_fit
        half = quantile(0.5 + pair.level / 2, df) * se
        return {"ratio": math.exp(log_r), "low": math.exp(log_r - half), "high": math.exp(log_r + half), "se": se,
                "df": df, "notes": [note]}
    pa, pb, ra, rb = pair.predicted_a, pair.predicted_b, pair.resampled_a, pair.resampled_b
    notes: list[str] = []
    value = pb / pa if pa != 0 else math.nan
    se = math.nan
    if pair.paired:
        notes.append("paired, but the aggregates hold no pairs of runs (no repetitions): judged as two sweeps")
    if pa > 0 and pb > 0 and len(ra) > 1 and len(rb) > 1 and np.all(ra > 0) and np.all(rb > 0):
        se = math.hypot(float(np.std(np.log(ra), ddof=1)), float(np.std(np.log(rb), ddof=1)))
    elif len(ra) > 1 and len(rb) > 1 and pa > 0 and pb > 0:  # a resample not positive: delta method
        se = math.hypot(float(np.std(ra, ddof=1)) / pa, float(np.std(rb, ddof=1)) / pb)
    if not (len(ea.model.bootstrap) and len(eb.model.bootstrap)):
        notes.append("no resamples on " + ("both sides" if not (ea.model.bootstrap or eb.model.bootstrap)
                                             else "side A" if not ea.model.bootstrap else "side B")
                     + ": no interval (fitted without repetitions)")
    if not (pa > 0 and pb > 0):
        notes.append(f"prediction not positive at the target (A {pa:.3g}, B {pb:.3g}): no ratio test")
    z = NormalDist().inv_cdf(0.5 + pair.level / 2)
    log_r = math.log(value) if value > 0 else math.nan
    low, high = (math.exp(log_r - z * se), math.exp(log_r + z * se)) if math.isfinite(se) else (math.nan, math.nan)
    return {"ratio": value, "low": low, "high": high, "se": se, "notes": notes}


def share(pair: Pair) -> dict[str, Any]:
    """The row's share of its metric's total at the target (the larger side's), and its impact; none
    (NaN) for a metric without a total: a rate (its declared direction higher, perfsweep.apps.metric_kinds)
    is no part of a sum."""
    if pair.b.kind_of(pair.metric).higher_is_better:
        return {"share": math.nan, "impact": math.nan}
    pa, pb, total_a, total_b = pair.predicted_a, pair.predicted_b, pair.total_a, pair.total_b
    value = max(abs(pa) / total_a if total_a else math.nan, abs(pb) / total_b if total_b else math.nan)
    change = pb - pa if pair.paired_fit is None else pa * (math.exp(pair.paired_fit[0]) - 1)  # paired: its ratio
    impact = change / total_a if total_a else math.nan
    return {"share": value if math.isfinite(value) else 0.0, "impact": impact}


def scaling(pair: Pair) -> dict[str, Any]:
    """Both models' lead orders (A's parameters named as B's), their lead shares, and the scaling class."""
    a, b = pair.a.model, pair.b.model
    cls, p = scaling_test(a, b, pair.names, pair.order, pair.b.kind_of(pair.metric).higher_is_better)
    return {"orders_a": _orders_text(a, pair.names, pair.order), "orders_b": lead.format_orders(b),
            "share_a": a.lead_share, "share_b": b.lead_share, "scaling": cls, "p_scaling": p}


STATISTICS: tuple[Callable[[Pair], dict[str, Any]], ...] = (ratio, share, scaling)


def measure(pair: Pair) -> dict[str, Any]:
    """Every statistic of ``STATISTICS`` of the pair, in its order: their columns merged, their notes joined."""
    out: dict[str, Any] = {"notes": []}
    for statistic in STATISTICS:
        columns = dict(statistic(pair))
        out["notes"] += columns.pop("notes", [])
        twice = sorted(set(columns) & set(out))
        if twice:
            raise ValueError(f"statistic {statistic.__name__}: {', '.join(twice)} returned by an earlier one")
        out.update(columns)
    return out


# --- the scaling class -------------------------------------------------------------------------------------------


def _orders_text(model: Model, names: list[str], order: list[int]) -> str:
    """A's lead orders, its parameters named as B's."""
    renamed = Model([names[order.index(k)] for k in range(len(names))], model.terms, model.coefficients,
                    reciprocal=model.reciprocal)
    return lead.format_orders(renamed)


def _renamed(model: Model, names: list[str], order: list[int]) -> Model:
    """A's model, its parameters named as B's."""
    return Model([names[order.index(k)] for k in range(len(names))], model.terms, model.coefficients,
                 reciprocal=model.reciprocal)


def _renamed_orders(model: Model, names: list[str], order: list[int]) -> dict[str, lead.Order]:
    a_names = [names[order.index(k)] for k in range(len(names))]
    return {a_names[model.param_names.index(p)]: o for p, o in lead.lead_orders(model).items()}


def scaling_class(a: Model, b: Model, names: list[str], order: list[int], higher_is_better: bool = False,
                  confidence: float = 0.95) -> str:
    """same / worse / better / changed / class uncertain (see the module's docstring)."""
    return scaling_test(a, b, names, order, higher_is_better, confidence)[0]


def scaling_test(a: Model, b: Model, names: list[str], order: list[int], higher_is_better: bool = False,
                 confidence: float = 0.95) -> tuple[str, float]:
    """The scaling class (see the module's docstring) and the p-value of its change: per parameter that
    changed, the share of the pairs of resamples (A's i, B's j) that do not grow in the class's direction,
    as (count + 1) / (pairs + 1), the smallest over the changed parameters times the number of parameters
    (Bonferroni within the row); 1.0 where no change is claimed. judge corrects it with the ratio tests
    (Holm over every gating test)."""
    oa, ob = _renamed_orders(a, names, order), lead.lead_orders(b)
    ranges = _common_ranges(a, b, names, order)
    if lead.same_lead_order(_renamed(a, names, order), b):
        return "same", 1.0
    if not (a.bootstrap and b.bootstrap):  # no resamples: no confidence
        return "class uncertain", 1.0
    ga, gb = _resampled_growth(a, names, order, ranges), _resampled_growth(b, names, None, ranges)
    tol = float(lead.EXPONENT_TOLERANCE) + 1e-12
    faster = slower = False
    p_values = []
    for k, n in enumerate(names):
        point = _growth(ob[n], ranges.get(n)) - _growth(oa[n], ranges.get(n))
        diff = gb[:, k][None, :] - ga[:, k][:, None]  # every pair of resamples (A's i, B's j)
        up, down = point > tol and np.mean(diff > 0) >= confidence, point < -tol and np.mean(diff < 0) >= confidence
        faster, slower = faster or bool(up), slower or bool(down)
        if up or down:
            p_values.append((float(np.sum(diff <= 0 if up else diff >= 0)) + 1) / (diff.size + 1))
    if not (faster or slower):
        return "class uncertain", 1.0
    p = min(1.0, min(p_values) * len(names))
    if higher_is_better:  # a rate that falls faster is worse (lead orders of 1/f are negated)
        faster, slower = slower, faster
    return ("worse" if faster and not slower else "better" if slower and not faster else "changed"), p


def _resampled_growth(model: Model, names: list[str], order: list[int] | None, ranges: lead.Ranges) -> np.ndarray:
    """Resamples x parameters (B's names): how each resampled model's lead order grows over the range."""
    rows = []
    for boot in model.bootstrap:
        orders = _renamed_orders(boot, names, order) if order is not None else lead.lead_orders(boot)
        rows.append([_growth(orders[n], ranges.get(n)) for n in names])
    return np.array(rows, dtype=float).reshape(len(rows), len(names))


def _growth(order: lead.Order, span: tuple[float, float] | None) -> float:
    if span is not None and 1 < span[0] < span[1]:
        return lead.growth(order, *span)
    return float(order[0]) + order[1] / 4  # a log2 power as 1/4 (lead_orders.order_distance)


def _common_ranges(a: Model, b: Model, names: list[str], order: list[int]) -> lead.Ranges:
    """Per parameter (B's names) the range both models were measured over (their union where they do
    not overlap)."""
    ra, rb = lead.measured_ranges(a), lead.measured_ranges(b)
    a_names = [names[order.index(k)] for k in range(len(names))]
    ra = {a_names[a.param_names.index(p)]: v for p, v in ra.items()}
    out = {}
    for n in names:
        if n in ra and n in rb:
            lo, hi = max(ra[n][0], rb[n][0]), min(ra[n][1], rb[n][1])
            out[n] = (lo, hi) if lo < hi else (min(ra[n][0], rb[n][0]), max(ra[n][1], rb[n][1]))
        elif n in ra or n in rb:
            out[n] = ra.get(n) or rb[n]
    return out


# --- the verdict's test (judge.py applies it to the rows of every study together) ------------------------------


def quantile(q: float, df: float = math.inf) -> float:
    """The standard normal's quantile, or Student's t's with ``df`` degrees of freedom (a finite ``df``:
    the spread of several baseline sweeps, judge.history)."""
    if math.isfinite(df):
        from scipy.stats import t  # heavy: only with several baselines

        return float(t.ppf(q, df))
    return NormalDist().inv_cdf(q)


def _tail(z: float, df: float) -> float:
    if math.isfinite(df):
        from scipy.stats import t  # heavy: as above

        return float(t.sf(z, df))
    return _sf(z)


def threshold_p_value(log_r: float, se: float, band: float, df: float = math.inf) -> float:
    """The p-value of "the change is beyond the threshold" (``band``: log(1 + threshold)) of a log ratio
    with standard error ``se`` (normal, or t with ``df`` degrees of freedom): twice the smaller of the two
    one-sided tests' (NaN: no test)."""
    if math.isfinite(se) and se > 0 and math.isfinite(log_r):
        p_up = _tail((log_r - band) / se, df)  # H0: ratio <= 1 + t (no increase beyond the threshold)
        p_down = _tail((-log_r - band) / se, df)  # H0: ratio >= 1 / (1 + t)
        return min(1.0, 2 * min(p_up, p_down))
    if se == 0 and math.isfinite(log_r):
        return 0.0 if abs(log_r) > band else 1.0
    return math.nan


POWER = 0.8  # of the minimum detectable effect


def detectable(se: float, alpha: float, df: float = math.inf, power: float = POWER) -> float:
    """The minimum detectable effect of a row, as a relative change: the smallest true change of B/A
    (either way) that a two-sided test at ``alpha`` on the log ratio finds with probability ``power``,
    exp((q(1 - alpha/2) + q(power)) se) - 1 (NaN: no standard error). A row whose effect is above the
    threshold cannot resolve it; the effect shrinks like 1/sqrt(repetitions)."""
    if not (math.isfinite(se) and se >= 0):
        return math.nan
    return math.expm1((quantile(1 - alpha / 2, df) + quantile(power, df)) * se)


def _sf(z: float) -> float:
    """The standard normal's upper tail (exact far out, where 1 - cdf is 0)."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count)."""
    idx = [i for i, p in enumerate(p_values) if math.isfinite(p)]
    m = len(idx)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out
