"""The judgement bench/designs.py uses for "the same dominant terms" (perfsweep.modeling.compare)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from perfsweep.modeling import Model, fit_model
from perfsweep.modeling.compare import (dominant_parameters, format_orders, judge_lead, lead_orders,
                                        resample_support, same_lead_order)
from perfsweep.modeling.terms import Factor, Term

NAMES = ["n", "m", "c"]


def term(**factors) -> Term:
    """term(n=("1/2", 2), m=("5/3", 0)) -> n^(1/2) * log2(n)^2 * m^(5/3)."""
    return Term(tuple(Factor(NAMES.index(name), Fraction(i), j) for name, (i, j) in sorted(
        factors.items(), key=lambda kv: NAMES.index(kv[0]))))


def model(*terms: Term, bootstrap: list[Model] | None = None) -> Model:
    return Model(list(NAMES), list(terms), np.ones(len(terms) + 1), bootstrap=bootstrap or [])


# the two step/forces models of a loaded-machine measurement (full grid, sparse design)
FULL_FORCES = model(term(n=("3/4", 0), m=("2", 0), c=("5/2", 2)), term(n=("1/4", 0)),
                    term(n=("2/3", 2), m=("3/2", 2)))
SPARSE_FORCES = model(term(n=("2/3", 0), m=("9/4", 0), c=("5/2", 2)), term(n=("0", 1)), term(n=("0", 1), m=("5/3", 0)))


def test_lead_orders_are_the_largest_growth_per_parameter():
    m = model(term(n=("1/2", 2), m=("5/3", 0), c=("5/2", 2)), term(n=("0", 1)), term(n=("1/2", 2), m=("3/2", 2)))
    assert lead_orders(m) == {"n": (Fraction(1, 2), 2), "m": (Fraction(5, 3), 0), "c": (Fraction(5, 2), 2)}
    assert format_orders(m) == "n^(1/2) log^2, m^(5/3), c^(5/2) log^2"
    flat = model(term(n=("1", 1), m=("5/2", 2)))
    assert lead_orders(flat)["c"] == (0, 0)
    assert dominant_parameters(flat) == {"n", "m"}
    assert dominant_parameters(model()) == set()  # a constant model grows in nothing


def test_lead_orders_survive_the_models_json_round_trip():
    assert lead_orders(Model.from_dict(FULL_FORCES.to_dict())) == lead_orders(FULL_FORCES)


def test_neighbouring_exponents_agree():
    assert same_lead_order(FULL_FORCES, SPARSE_FORCES)  # n 3/4 vs 2/3, m 2 vs 9/4, c equal
    assert same_lead_order(model(term(n=("1/2", 0))), model(term(n=("3/4", 0))))  # exactly 1/4 apart
    assert same_lead_order(model(term(n=("1", 0))), model(term(n=("1", 1))))  # one power of log
    assert same_lead_order(FULL_FORCES, FULL_FORCES)


@pytest.mark.parametrize("a, b", [
    (term(n=("1", 0), m=("2", 0)), term(n=("1", 0), c=("2", 0))),  # m vs c: different dominant parameters
    (term(n=("1", 0), m=("2", 0), c=("3", 0)), term(n=("1", 0), m=("2", 0))),  # c missing
    (term(n=("0", 1)), term(m=("0", 1))),  # log2(n) vs log2(m)
    (term(n=("1", 0)), term(n=("3/2", 0))),  # exponents 1/2 apart
    (term(n=("1/4", 0)), term(n=("2/3", 0))),  # 5/12 apart
    (term(m=("2", 0)), term(m=("3", 0))),  # m^2 vs m^3
    (term(n=("1", 0)), term(n=("1", 2))),  # two powers of log apart
])
def test_different_dominant_terms_are_judged_different(a, b):
    assert not same_lead_order(model(a), model(b))
    assert not same_lead_order(model(b), model(a))


def test_a_parameter_the_model_is_constant_in_never_matches_one_it_grows_in():
    # log2(n) vs nothing in n: the smallest growth still is growth
    assert not same_lead_order(model(term(n=("0", 1)), term(m=("2", 0))), model(term(m=("2", 0))))


def test_judge_passes_agreeing_lead_orders_and_reports_the_exact_comparison():
    ref = model(*FULL_FORCES.terms, bootstrap=[FULL_FORCES] * 8 + [SPARSE_FORCES] * 2)
    j = judge_lead(ref, SPARSE_FORCES)
    assert (j.exact, j.close, j.verdict) == (False, True, "PASS")
    assert j.self_support == 1.0 and j.support == 1.0  # both agree with both (same lead order)
    assert judge_lead(ref, ref).exact


def test_judge_fails_against_a_stable_reference():
    other = model(term(n=("1", 1), m=("5/2", 2)))  # no c at all
    ref = model(*FULL_FORCES.terms, bootstrap=[FULL_FORCES] * 9 + [other])
    j = judge_lead(ref, other)
    assert j.self_support == 0.9 and j.support == pytest.approx(0.1)
    assert (j.close, j.verdict) == (False, "FAIL")  # the full grid is sure of its lead order


def test_judge_is_inconclusive_only_within_the_full_grids_own_uncertainty():
    other = model(term(n=("1", 1), m=("5/2", 2)))
    scatter = [model(term(m=(str(k), 0))) for k in (1, 2, 3)]  # lead orders that agree with neither
    unstable = model(*FULL_FORCES.terms, bootstrap=[FULL_FORCES] * 3 + [other] * 2 + scatter * 5)
    j = judge_lead(unstable, other)
    assert j.self_support == 0.15 and j.support == 0.1
    assert j.verdict == "INCONCLUSIVE"
    # the same unstable reference, but none of its resamples supports the other's lead order
    unsupported = model(term(c=("3", 0)))
    assert judge_lead(unstable, unsupported).support == 0 and judge_lead(unstable, unsupported).verdict == "FAIL"
    # without resamples there is no uncertainty to appeal to
    bare = model(*FULL_FORCES.terms)
    assert math.isnan(resample_support(bare, other)) and judge_lead(bare, other).verdict == "FAIL"


def test_fitted_models_of_different_laws_are_judged_different():
    """Real fits (the modeler, no hand-made terms): n*m^2 and n*c^2 on the same grid, with noise."""
    rng = np.random.default_rng(7)
    grid = np.array([[n, m, c] for n in (200, 400, 600, 800, 1000) for m in (1, 2, 3, 4, 5)
                     for c in (1.5, 1.75, 2.0, 2.25, 2.5)], dtype=float)
    noise = 1 + 0.02 * rng.standard_normal(len(grid))
    a = fit_model(grid, 1e-3 * grid[:, 0] * grid[:, 1] ** 2 * noise, NAMES)
    b = fit_model(grid, 1e-3 * grid[:, 0] * grid[:, 2] ** 2 * noise, NAMES)
    assert dominant_parameters(a) == {"n", "m"} and dominant_parameters(b) == {"n", "c"}
    assert not same_lead_order(a, b)
    assert same_lead_order(a, fit_model(grid, 2e-3 * grid[:, 0] * grid[:, 1] ** 2 * noise[::-1], NAMES))


def fitted_on(fitted: Model, **ranges) -> Model:
    """``fitted`` with points spanning ``ranges`` (name=(lo, hi)) in its parameters: its measured range."""
    lo_hi = [ranges.get(name, (1.0, 1.0)) for name in fitted.param_names]
    fitted.points = np.array([[lo for lo, _ in lo_hi], [hi for _, hi in lo_hi]], dtype=float)
    return fitted


def test_lead_orders_are_compared_by_their_growth_over_the_measured_range():
    over_n = {"n": (200.0, 1000.0)}
    # n^(3/4) log2(n)^2 grows like n^1.08 over n = 200-1000: closer to n than n^(5/4) is
    assert same_lead_order(fitted_on(model(term(n=("1", 0))), **over_n), model(term(n=("3/4", 2))))
    assert same_lead_order(fitted_on(model(term(n=("2/3", 2))), **over_n), model(term(n=("1", 0))))
    assert not same_lead_order(fitted_on(model(term(n=("1", 0))), **over_n), model(term(n=("1", 2))))  # n^1.33
    assert not same_lead_order(fitted_on(model(term(n=("1", 0))), **over_n), model(term(n=("3/2", 0))))
    # over p = 2-1024 one power of log2 grows like p^0.37: p and p log2(p) differ there
    wide = fitted_on(model(term(n=("1", 0))), n=(2.0, 1024.0))
    assert not same_lead_order(wide, model(term(n=("1", 1))))
    # without points, or over a range from 1 (log2(1) = 0), the exponents as written
    assert not same_lead_order(model(term(n=("1", 0))), model(term(n=("3/4", 2))))
    assert same_lead_order(model(term(n=("1", 0))), model(term(n=("1", 1))))
    from_one = fitted_on(model(term(m=("2", 0))), m=(1.0, 5.0))
    assert same_lead_order(from_one, model(term(m=("7/4", 1)))) and not same_lead_order(from_one, model(term(m=("3/2", 1))))


def test_growth_is_the_power_that_grows_as_much():
    from perfsweep.modeling.compare import growth

    assert growth((Fraction(5, 2), 0), 200, 1000) == 2.5
    g = growth((Fraction(3, 4), 2), 200, 1000)
    assert (1000 / 200) ** g == pytest.approx(1000 ** 0.75 * math.log2(1000) ** 2 / (200 ** 0.75 * math.log2(200) ** 2))
