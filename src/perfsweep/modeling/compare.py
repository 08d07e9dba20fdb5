"""How close two models' forms are: their lead orders per parameter, and whether they agree.

Usage::

    lead_orders(model)               # {"n": (Fraction(1, 2), 2), "m": (Fraction(5, 3), 0), "c": (0, 0)}
    dominant_parameters(model)       # {"n", "m"}: the parameters the model grows in
    same_lead_order(a, b)            # same dominant parameters, growth within 1/4 over the measured range
    resample_support(full, other)    # share of full's resampled models whose lead order agrees with other's
    judge_lead(full, other)          # LeadJudgement: exact, close, supports, verdict PASS / FAIL / INCONCLUSIVE

A model's *lead order in a parameter* is the largest growth x^i * log2(x)^j among its terms' factors of
that parameter (compared as Term.outgrows does: i first, then j), (0, 0) where the model is constant in
it: how the model grows in that parameter with the others held fixed. It is the same for the model and
for its dominant terms alone (a term outgrown by another grows no faster in any parameter), so it is a
property of ``Model.lead()``, read per parameter instead of as one string.

Why not the exact lead string: with 5-10 % noise per run Extra-P identifies the exact dominant term of a
3-parameter function in about 17 % of cases, and a full grid here reproduced its own lead in 17 % of its
resampled models; exact identity is not something even the full grid achieves. The sparse-modeling
evaluation of Ritter et al. (IPDPS 2020; its artifact sorts models into "incorrect", "lead order term
correct" and "identical") credits a model whose lead-order term is right even where the whole model is
not. The tolerances below are this module's choice, derived from Extra-P's search space (not taken
from a paper). Two lead orders agree when

1. the models grow in the same parameters (different dominant parameters are always different), and
2. in every parameter they grow alike over the values measured: x^i log2(x)^j grows between the
   smallest and the largest measured value x_lo, x_hi like x^g with g = i + j ln(ln x_hi / ln x_lo) /
   ln(x_hi / x_lo) (``growth``; g = i without a log factor), and the two g differ by at most
   ``EXPONENT_TOLERANCE`` (1/4: no two neighbouring exponents of Extra-P's set 0, 1/4, 1/3, ..., 11/4,
   3 are further apart, so the tolerance forgives at least a confusion of neighbouring hypotheses, and
   nothing as coarse as n vs n^(3/2) or m^(3/2) vs m^2). Over n = 200-1000 one power of log2(n) grows
   like n^0.17, so n and n^(3/4) log2(n)^2 (like n^1.08) are neighbours there, closer than n and
   n^(5/4); over p = 2-1024 one power of log2 grows like p^0.37, and p and p log2(p) are not. Where
   the range is unknown (a model without points) or reaches down to 1 (log2(1) = 0: the growth of a
   log factor is unbounded there), the exponents are compared as written: powers within 1/4, log
   exponents within ``LOG_TOLERANCE`` (one power of log2, the neighbours in 0, 1, 2).

Until 2026-11-25 17:15 the rule compared the exponents as written everywhere; it judged n^1 and
n^(3/4) log2(n)^2 different over n = 200-1000, where they differ less than n^1 and n^(5/4).

judge_lead adds the full grid's own uncertainty: how many of its resampled models agree (by the same
rule) with its own lead order and with the other design's. Its verdict: PASS when the lead orders agree;
otherwise INCONCLUSIVE when the full grid does not reproduce its own lead order in at least half of its
resamples and at least ``SUPPORT`` (1/10) of them agree with the other design's (the difference is
within what the full grid itself cannot decide); FAIL otherwise. The rule was fixed before the measuring
it judges; the exact comparison is reported beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from perfsweep.modeling.model import Model

EXPONENT_TOLERANCE = Fraction(1, 4)
LOG_TOLERANCE = 1
STABLE = 0.5  # share of its resamples a model must agree with to count as a stable reference
APART = 10.0  # order_distance of a parameter in which one lead order grows and the other does not
SUPPORT = 0.1  # share of the reference's resamples that must agree with a lead order to "support" it

Order = tuple[Fraction, int]
Ranges = dict[str, tuple[float, float]]


def lead_orders(model: Model) -> dict[str, Order]:
    """Per parameter name: the largest (i, j) of the model's factors in it, (0, 0) if none; of a
    reciprocal model 1 / f (a rate) the negated orders of f (its growth is the inverse)."""
    out: dict[str, Order] = {name: (Fraction(0), 0) for name in model.param_names}
    for term in model.terms:
        for f in term.factors:
            name = model.param_names[f.param]
            out[name] = max(out[name], (Fraction(f.i), int(f.j)))
    if model.reciprocal:
        return {name: (-i, -j) for name, (i, j) in out.items()}
    return out


def dominant_parameters(model: Model) -> set[str]:
    """The parameters the model grows in (lead order other than (0, 0))."""
    return {name for name, order in lead_orders(model).items() if order != (Fraction(0), 0)}


def measured_ranges(model: Model) -> Ranges:
    """Per parameter the smallest and largest value of the points the model was fitted to ({} without)."""
    points = np.asarray(model.points, dtype=float)
    if points.ndim != 2 or points.shape[0] == 0 or points.shape[1] != len(model.param_names):
        return {}
    return {name: (float(points[:, k].min()), float(points[:, k].max())) for k, name in enumerate(model.param_names)}


def growth(order: Order, lo: float, hi: float) -> float:
    """How x^i log2(x)^j grows from x = lo to hi, as the power of x that grows as much (lo > 1, hi > lo)."""
    i, j = order
    if j == 0:
        return float(i)
    return float(i) + j * math.log(math.log(hi) / math.log(lo)) / math.log(hi / lo)


def _agree(a: Order, b: Order, span: tuple[float, float] | None, exponent_tol: Fraction, log_tol: int) -> bool:
    if span is not None and 1 < span[0] < span[1]:
        return abs(growth(a, *span) - growth(b, *span)) <= float(exponent_tol) + 1e-12
    return abs(a[0] - b[0]) <= exponent_tol and abs(a[1] - b[1]) <= log_tol


def orders_agree(a: dict[str, Order], b: dict[str, Order], exponent_tol: Fraction = EXPONENT_TOLERANCE,
                 log_tol: int = LOG_TOLERANCE, ranges: Ranges | None = None) -> bool:
    """Lead orders (as from lead_orders) agree: same dominant parameters, and per parameter the growth
    over its measured range (``ranges``) within ``exponent_tol``, or without a range the exponents as
    written within the tolerances."""
    zero = (Fraction(0), 0)
    names = set(a) | set(b)
    if {n for n in names if a.get(n, zero) != zero} != {n for n in names if b.get(n, zero) != zero}:
        return False
    ranges = ranges or {}
    return all(_agree(a.get(n, zero), b.get(n, zero), ranges.get(n), exponent_tol, log_tol) for n in names)


def order_distance(a: dict[str, Order], b: dict[str, Order], ranges: Ranges | None = None) -> float:
    """How far apart two lead orders are: per parameter the difference of their growth over its measured
    range (``ranges``; without one, or from 1, of the exponents as written, a log2 power counting 1/4),
    summed; a parameter in which only one of them grows counts ``APART``."""
    zero = (Fraction(0), 0)
    ranges = ranges or {}
    total = 0.0
    for name in set(a) | set(b):
        oa, ob = a.get(name, zero), b.get(name, zero)
        if oa == ob:
            continue
        if (oa == zero) != (ob == zero):
            total += APART
            continue
        span = ranges.get(name)
        if span is not None and 1 < span[0] < span[1]:
            total += abs(growth(oa, *span) - growth(ob, *span))
        else:
            total += abs(float(oa[0] - ob[0])) + abs(oa[1] - ob[1]) / 4
    return total


def same_lead_order(a: Model, b: Model, exponent_tol: Fraction = EXPONENT_TOLERANCE,
                    log_tol: int = LOG_TOLERANCE) -> bool:
    """The two models' lead orders agree (see the module's rule) over the range ``a`` was measured on."""
    return orders_agree(lead_orders(a), lead_orders(b), exponent_tol, log_tol, measured_ranges(a))


def resample_support(reference: Model, other: Model) -> float:
    """Share of the reference's resampled models whose lead order agrees with ``other``'s (NaN without
    resamples), over the reference's measured range."""
    if not reference.bootstrap:
        return float("nan")
    target, ranges = lead_orders(other), measured_ranges(reference)
    return sum(orders_agree(lead_orders(b), target, ranges=ranges) for b in reference.bootstrap) / len(reference.bootstrap)


def format_orders(model: Model) -> str:
    """'n^(1/2) log^2, m^(5/3), c^0': the lead order in every parameter."""
    parts = []
    for name, (i, j) in lead_orders(model).items():
        power = str(i) if i.denominator == 1 else f"({i})"
        parts.append(f"{name}^{power}" + (f" log^{j}" if j > 1 else " log" if j == 1 else ""))
    return ", ".join(parts)


@dataclass
class LeadJudgement:
    exact: bool  # the lead strings are identical
    close: bool  # the lead orders agree (same_lead_order)
    self_support: float  # share of the reference's resamples agreeing with the reference's own lead order
    support: float  # share of the reference's resamples agreeing with the other's lead order
    verdict: str  # PASS, INCONCLUSIVE or FAIL


def judge_lead(reference: Model, other: Model) -> LeadJudgement:
    """Does ``other`` reach the same dominant terms as ``reference`` (the full grid's model)?"""
    exact = reference.lead() == other.lead()
    close = same_lead_order(reference, other)
    self_support = resample_support(reference, reference)
    support = resample_support(reference, other)
    if close:
        verdict = "PASS"
    elif self_support < STABLE and support >= SUPPORT:  # NaN compares False: no resamples, no excuse
        verdict = "INCONCLUSIVE"
    else:
        verdict = "FAIL"
    return LeadJudgement(exact, close, self_support, support, verdict)
