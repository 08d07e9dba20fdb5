"""bench/replicates.py's agreement of replicate sweeps judged by their predictions (issue 44)."""

from __future__ import annotations

import importlib
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from perfsweep.modeling import Model
from perfsweep.modeling.terms import Factor, Term

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def replicates():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("replicates")
    finally:
        sys.path.remove(str(BENCH))


def law(coef: float, n_power: str, n_log: int = 0, m_power: str = "2") -> Model:
    """coef * n^n_power log2(n)^n_log * m^m_power over (n, m)."""
    return Model(["n", "m"], [Term((Factor(0, Fraction(n_power), n_log), Factor(1, Fraction(m_power), 0)))],
                 np.array([0.0, coef]))


def test_predictions_apart_is_the_furthest_two_sweeps_ratio(replicates):
    # the case: n^(3/4) log2(n) m^2 in one sweep, n m^(9/4) in the others, agreeing at (1000, 3)
    a = law(1.0, "3/4", 1)
    b = law(1000 ** 0.75 * np.log2(1000) * 9 / (1000 * 3 ** 2.25), "1", 0, "9/4")
    points = np.array([[1000.0, 3.0], [2500.0, 3.0], [1000.0, 7.0]])
    out = replicates.predictions_apart([a, b, b], points)
    expected = np.array([b.predict(points) / a.predict(points), a.predict(points) / b.predict(points)]).max(axis=0) - 1
    np.testing.assert_allclose(out["apart"], expected)
    assert out["apart"][0] == pytest.approx(0.0, abs=1e-12)
    assert out["apart"][1] > 0.10 and out["apart"][2] > 0.10  # they part beyond the grid in n and in m
    assert out["over_10"] == 2 and out["max"] == pytest.approx(expected.max())
    assert out["median"] == pytest.approx(np.median(expected))
    # one sweep alone has nothing to be apart from; a non-positive prediction has no ratio
    assert np.isnan(replicates.predictions_apart([a], points)["median"])
    negative = Model(["n", "m"], [], np.array([-1.0]))
    assert np.isnan(replicates.predictions_apart([a, negative], points)["apart"]).all()


def test_validation_points_are_the_union_of_the_sweeps(replicates):
    fit = {"validation": [{"parameters": {"n": 2500, "m": 3}}, {"parameters": {"n": 1000, "m": 7}}]}
    other = {"validation": [{"parameters": {"m": 3, "n": 2500}}]}
    points = replicates.validation_points([fit, None, other], ["n", "m"])
    np.testing.assert_array_equal(points, [[1000.0, 7.0], [2500.0, 3.0]])
    assert replicates.validation_points([None], ["n", "m"]).shape == (0, 2)
