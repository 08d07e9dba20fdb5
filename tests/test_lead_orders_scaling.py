"""perfsweep compare's scaling class uses the one lead-order rule (modeling.lead_orders, issue 44)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from perfsweep.compare.statistics import scaling_class
from perfsweep.modeling import Model
from perfsweep.modeling.terms import Factor, Term


def model(names, *terms, share=1.0):
    out = Model(list(names), [Term(tuple(Factor(names.index(k), Fraction(i), j) for k, (i, j) in t.items()))
                              for t in terms], np.ones(len(terms) + 1), lead_share=share)
    out.points = np.array([[200.0, 1.0], [1000.0, 5.0]])
    return out


def test_a_sum_and_a_product_are_not_the_same_class():
    names = ["n", "m"]
    total, product = model(names, {"n": ("1", 0)}, {"m": ("2", 0)}), model(names, {"n": ("1", 0), "m": ("2", 0)})
    assert scaling_class(total, product, names, [0, 1], "time") != "same"  # the loose rule called it same
    more = model(names, {"n": ("1", 0)}, {"m": ("2", 0)}, {"m": ("1", 0)})  # a term under the lead terms
    assert scaling_class(total, more, names, [0, 1], "time") == "same"


def test_a_falling_factor_is_compared_and_parameters_are_matched_by_name():
    # A names its parameters (p, n), B (n, p): order maps A's k-th parameter to B's
    a = model(["p", "n"], {"n": ("1", 0), "p": ("-1", 0)})
    b_same = model(["n", "p"], {"n": ("1", 0), "p": ("-1", 0)})
    b_serial = model(["n", "p"], {"n": ("1", 0)})
    assert scaling_class(a, b_same, ["n", "p"], [1, 0], "time") == "same"
    assert scaling_class(a, b_serial, ["n", "p"], [1, 0], "time") != "same"  # n / p vs n: the loose rule's same


def test_order_distances_are_order_distance_of_every_pair():
    """modeling.consensus takes the distances of all its forms at once (lead_orders.order_distances): the
    same as order_distance pair by pair, with measured ranges (growth over them) and without (exponents)."""
    from perfsweep.modeling.lead_orders import order_distance, order_distances

    F = Fraction
    rows = [{"n": (F(1), 0), "m": (F(2), 1)}, {"n": (F(0), 0), "m": (F(8, 3), 0)}, {"n": (F(1, 3), 2)}, {}]
    cols = [{"m": (F(3), 0)}, {"n": (F(1), 0), "m": (F(2), 1)}, {"c": (F(-1), 0)}]
    for ranges in (None, {"n": (100.0, 300.0)}, {"n": (100.0, 300.0), "m": (1.0, 3.0), "c": (1.5, 2.5)}):
        got, want = order_distances(rows, cols, ranges), [[order_distance(a, b, ranges) for b in cols] for a in rows]
        assert np.allclose(got, want, rtol=0, atol=1e-12) and got[1, 1] > 0 and got[0, 1] == 0
