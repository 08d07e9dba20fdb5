"""Lead orders: which terms of a model dominate beyond the measured grid, and whether two models agree.

Usage::

    lead_terms(model)                # frozenset({(("m", 2, 0), ("n", 1, 0))}): the dominant terms' exponents
    same_lead_order(a, b)            # the same dominant terms, every parameter and falling factor compared
    lead_orders(model)               # {"n": (Fraction(1), 0), "m": (Fraction(2), 0)}: largest growth per parameter
    dominant_parameters(model)       # {"n", "m"}: the parameters the model grows in
    resample_support(full, other)    # share of full's resampled models whose lead order is other's
    judge_lead(full, other)          # LeadJudgement: exact, close, supports, verdict PASS / FAIL / INCONCLUSIVE

**The rule (issue 44).** A term's *profile* is its exponents per parameter: for every parameter x
of the model the pair (i, j) of its factor x^i log2(x)^j, (0, 0) where the term has no factor of x.
The constant is a term too, of profile all (0, 0). One term *dominates* another where, beyond the
grid in every parameter, it grows at least as fast in each parameter and strictly faster in one
((i, j) compared as Term.outgrows compares them: i first, then j; p^-1 is (-1, 0), slower than the
constant's (0, 0)). A model's *lead terms* are the terms (the constant included) that no other of its
terms dominates; two models have **the same lead order** when their lead terms have the same
profiles, every parameter's (i, j) equal. So

- every parameter is compared, falling factors included: n p^-1 (lead terms {n p^-1, 1}: the
  constant outgrows n p^-1 in p) and n ({n}) differ; c + n + n p^-1 has lead terms {n};
- sums are apart from products: n + m^2 (lead terms {n, m^2}) and n m^2 ({n m^2}) differ;
- what lies under the lead terms does not count: n^2 + n and n^2 + n log2(n) agree;
- of a reciprocal model 1 / f (a rate) the profiles of f, negated (it falls as f grows).

The only tolerance is where forms are the same function: exponents are compared as exact fractions
(a factor x^0 log2(x)^0 is no factor), so n^(3/4) log2(n)^2 and n, n^(9/4) and n^2 log2(n) differ
however alike they grow over a narrow grid. Over n = 200-1000 these pairs part by 10-30 % at 2.5x
the grid (growth() below says how alike they look inside it); a rule that forgives them called forms
the same that differ by 26 % at 2.5x the grid, compared no falling factor and took n + m^2 for n m^2
(the rule before 2026-11-27: each parameter's largest growth within 1/4 of a power over the grid).
Where the data cannot tell such forms apart the resamples' choices spread over them: the lead share
falls and the intervals (modeling.model.Model.interval) widen, which is what a reader must see.

The rule serves everywhere lead orders are compared: the resamples' lead share and runner-up
(modeling.consensus), ``perfsweep compare``'s scaling class (compare.statistics),
bench/designs.py's judgement (judge_lead) and bench/replicates.py's agreement of sweeps.
lead_orders (the largest (i, j) per parameter) is kept for display (format_orders), for the
direction of a change (faster or slower in a parameter) and, with grow_alike and order_distance, for
modeling.consensus's choice of the form to report (which forms grow alike over the grid, which lies
at the centre of the resamples' choices): that choice stays what it was before this rule, so that
the reported models do not change with it; the lead share reported beside them is this rule's.

judge_lead adds the full grid's own uncertainty: how many of its resampled models agree (by the same
rule) with its own lead order and with the other design's. Its verdict: PASS when the lead orders agree;
otherwise INCONCLUSIVE when the full grid does not reproduce its own lead order in at least half of its
resamples and at least ``SUPPORT`` (1/10) of them agree with the other design's (the difference is
within what the full grid itself cannot decide); FAIL otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from perfsweep.modeling.model import Model
from perfsweep.modeling.terms import Term

EXPONENT_TOLERANCE = Fraction(1, 4)  # compare's scaling class: a change of growth smaller than this has no direction
STABLE = 0.5  # share of its resamples a model must agree with to count as a stable reference
APART = 10.0  # order_distance of a parameter in which one lead order grows and the other does not
SUPPORT = 0.1  # share of the reference's resamples that must agree with a lead order to "support" it

Order = tuple[Fraction, int]
Ranges = dict[str, tuple[float, float]]
Profile = tuple[tuple[str, Fraction, int], ...]  # (parameter, i, j) of a term's factors, by name; () the constant
LeadSet = frozenset  # of Profile: a model's lead terms


def _profile(term: Term, names: list[str], sign: int) -> Profile:
    return tuple(sorted((names[f.param], sign * Fraction(f.i), sign * int(f.j)) for f in term.factors
                        if f.i != 0 or f.j != 0))


def _dominates(a: Profile, b: Profile) -> bool:
    """Term a grows at least as fast as b in every parameter beyond the grid, strictly faster in one."""
    zero = (Fraction(0), 0)
    ga, gb = {n: (i, j) for n, i, j in a}, {n: (i, j) for n, i, j in b}
    names = set(ga) | set(gb)
    return (all(ga.get(n, zero) >= gb.get(n, zero) for n in names)
            and any(ga.get(n, zero) > gb.get(n, zero) for n in names))


def lead_terms(model: Model) -> LeadSet:
    """The profiles of the model's lead terms: its terms and the constant that no other of them
    dominates (see the module's rule); of a reciprocal model 1 / f those of f, negated."""
    sign = -1 if model.reciprocal else 1
    profiles = {_profile(t, list(model.param_names), 1) for t in model.terms} | {()}
    lead = {p for p in profiles if not any(_dominates(o, p) for o in profiles if o != p)}
    return frozenset(tuple((n, sign * i, sign * j) for n, i, j in p) for p in lead)


def same_lead_order(a: Model, b: Model) -> bool:
    """The two models have the same lead terms (every parameter's exponents equal; see the module)."""
    return lead_terms(a) == lead_terms(b)


def lead_orders(model: Model) -> dict[str, Order]:
    """Per parameter name: the largest (i, j) of the model's factors in it, (0, 0) if none; of a
    reciprocal model 1 / f (a rate) the negated orders of f (its growth is the inverse). For display
    and the direction of a change; whether two models agree is same_lead_order's."""
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


def _apart(oa: Order, ob: Order, span: tuple[float, float] | None) -> float:
    zero = (Fraction(0), 0)
    if oa == ob:
        return 0.0
    if (oa == zero) != (ob == zero):
        return APART
    if span is not None and 1 < span[0] < span[1]:
        return abs(growth(oa, *span) - growth(ob, *span))
    return abs(float(oa[0] - ob[0])) + abs(oa[1] - ob[1]) / 4


def order_distance(a: dict[str, Order], b: dict[str, Order], ranges: Ranges | None = None) -> float:
    """How far apart two per-parameter lead orders are: per parameter the difference of their growth
    over its measured range (``ranges``; without one, or from 1, of the exponents as written, a log2
    power counting 1/4), summed; a parameter in which only one of them grows counts ``APART``."""
    zero = (Fraction(0), 0)
    ranges = ranges or {}
    return sum(_apart(a.get(n, zero), b.get(n, zero), ranges.get(n)) for n in set(a) | set(b))


def order_distances(rows: list[dict[str, Order]], cols: list[dict[str, Order]],
                    ranges: Ranges | None = None) -> np.ndarray:
    """order_distance of every row's orders to every column's (len(rows) x len(cols)), per parameter
    once for each pair of the distinct orders in it (few: a consensus compares some fifty forms)."""
    zero = (Fraction(0), 0)
    ranges = ranges or {}
    out = np.zeros((len(rows), len(cols)))
    for name in sorted(set().union(*rows, *cols)):
        ra, cb = [o.get(name, zero) for o in rows], [o.get(name, zero) for o in cols]
        distinct = sorted(set(ra) | set(cb))
        at = {order: k for k, order in enumerate(distinct)}
        apart = np.array([[_apart(x, y, ranges.get(name)) for y in distinct] for x in distinct])
        out += apart[np.ix_([at[o] for o in ra], [at[o] for o in cb])]
    return out


def lead_distance(a: LeadSet, b: LeadSet, ranges: Ranges | None = None) -> float:
    """How far apart two models' lead terms are: each lead term's order_distance to the nearest of
    the other's, averaged over both sets' terms (0 exactly where same_lead_order)."""
    def orders(p: Profile) -> dict[str, Order]:
        return {n: (i, j) for n, i, j in p}

    def one_way(x: LeadSet, y: LeadSet) -> list[float]:
        return [min(order_distance(orders(p), orders(q), ranges) for q in y) for p in x]

    if not a or not b:
        return 0.0 if a == b else APART
    both = one_way(a, b) + one_way(b, a)
    return float(sum(both) / len(both))


def grow_alike(a: dict[str, Order], b: dict[str, Order], ranges: Ranges | None = None) -> bool:
    """Whether two per-parameter lead orders (lead_orders) grow alike over the measured range: the
    same parameters grow, and in each the growth within EXPONENT_TOLERANCE (growth(); without a range,
    or from 1, the written exponents, log2 powers within one). Not whether two models have the same
    lead order (same_lead_order says that): a closeness by which modeling.consensus chooses the form
    to report, as it did before issue 44, so that the reported models stay the same."""
    zero = (Fraction(0), 0)
    names = set(a) | set(b)
    if {n for n in names if a.get(n, zero) != zero} != {n for n in names if b.get(n, zero) != zero}:
        return False
    ranges = ranges or {}
    for n in names:
        oa, ob, span = a.get(n, zero), b.get(n, zero), ranges.get(n)
        if span is not None and 1 < span[0] < span[1]:
            if abs(growth(oa, *span) - growth(ob, *span)) > float(EXPONENT_TOLERANCE) + 1e-12:
                return False
        elif abs(oa[0] - ob[0]) > EXPONENT_TOLERANCE or abs(oa[1] - ob[1]) > 1:
            return False
    return True


def resample_support(reference: Model, other: Model) -> float:
    """Share of the reference's resampled models whose lead order is ``other``'s (NaN without resamples)."""
    if not reference.bootstrap:
        return float("nan")
    target = lead_terms(other)
    return sum(lead_terms(b) == target for b in reference.bootstrap) / len(reference.bootstrap)


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
