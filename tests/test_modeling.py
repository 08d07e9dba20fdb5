import itertools
import json
import warnings

import numpy as np
import pytest

from perfsweep.modeling import FewValuesWarning, FitOptions, Model, ModelingError, Term, dominant_terms, fit_model
from perfsweep.modeling.terms import Factor, exponent_pairs
from fractions import Fraction as F

V = [2.0, 4.0, 8.0, 16.0, 32.0]


def grid(*axes):
    return np.array(list(itertools.product(*axes)))


def terms_text(model):
    return sorted(t.text(model.param_names) for t in model.terms)


def test_search_space_is_extrap_default():
    pairs = exponent_pairs()
    assert len(pairs) == 42  # Extra-P's 43 (i, j) pairs less the constant (0, 0)
    assert (F(3), 0) in pairs and (F(5, 2), 2) in pairs and (F(4, 5), 0) in pairs
    assert (F(-1), 0) in exponent_pairs(negative=True) and (F(-1), 0) not in pairs


@pytest.mark.parametrize("f, expected", [
    (lambda p: 3 + 2 * p ** 1.5 * np.log2(p), ["p^3/2 * log2(p)"]),
    (lambda p: 10 + 0.5 * p ** 2, ["p^2"]),
    (lambda p: 1 + 4 * np.log2(p) ** 2, ["log2(p)^2"]),
    (lambda p: 7 + 0.1 * p ** (1 / 3), ["p^1/3"]),
])
def test_recovers_one_parameter_functions_exactly(f, expected):
    x = np.array(V)[:, None]
    m = fit_model(x, f(x[:, 0]), ["p"])
    assert terms_text(m) == expected
    assert m.predict([[64.0]])[0] == pytest.approx(f(64.0), rel=1e-6)
    assert m.adj_r2 == pytest.approx(1.0) and m.smape < 1e-5  # percent


def test_recovers_two_parameter_product_with_log():
    x = grid(V, [1, 2, 3, 4, 5.0])
    y = 4.41 + 8.03e-3 * x[:, 1] * x[:, 0] * np.log2(x[:, 0])
    m = fit_model(x, y, ["n", "m"])
    assert terms_text(m) == ["n * log2(n) * m"]
    assert m.coefficients == pytest.approx([4.41, 8.03e-3], rel=1e-6)
    assert str(m) == "4.41 + 0.00803 * n * log2(n) * m"
    assert r"\log_2 n" in m.to_latex()


def test_recovers_three_parameter_sum_of_products():
    x = grid(V, [1, 2, 3, 4, 5.0], [10, 20, 30, 40, 50.0])
    y = 1 + 0.5 * x[:, 0] * x[:, 1] ** 2 + 0.01 * x[:, 2] ** 3
    m = fit_model(x, y, ["a", "b", "c"])
    assert terms_text(m) == ["a * b^2", "c^3"]
    assert m.predict(x) == pytest.approx(y, rel=1e-8)


def test_repetitions_are_averaged_and_json_round_trip():
    x = grid(V, [1, 2, 3, 4, 5.0])
    truth = 2 + x[:, 0] * x[:, 1]
    reps = truth[:, None] * np.array([0.99, 1.0, 1.01])[None, :]
    m = fit_model(x, reps, ["a", "b"])
    assert terms_text(m) == ["a * b"]
    assert m.values == pytest.approx(truth)
    back = Model.from_dict(json.loads(json.dumps(m.to_dict())))
    assert str(back) == str(m) and back.predict(x) == pytest.approx(m.predict(x))
    assert back.points.shape == (25, 2)


def test_negative_exponents_for_strong_scaling():
    p = np.array([1, 2, 4, 8, 16, 32.0])[:, None]
    y = 0.5 + 100 / p[:, 0]
    m = fit_model(p, y, ["p"], options=FitOptions(negative_exponents=True))
    assert terms_text(m) == ["p^-1"]


def test_dominant_terms():
    a2 = Term((Factor(0, F(2), 0),))
    a1log = Term((Factor(0, F(1), 1),))
    b = Term((Factor(1, F(1), 0),))
    assert dominant_terms([a2, a1log]) == {a2}
    assert dominant_terms([a2, b]) == {a2, b}


@pytest.mark.parametrize("x, y, message", [
    (np.array([[1.0], [2.0]]), [1.0, 2.0], "parameter x0 has 2 distinct values; at least 3 are needed"),
    (np.array([[1.0], [2.0], [3.0]]), [1.0, -2.0, 3.0], "measurements must be positive"),
    (np.array([[1.0], [2.0], [3.0]]), [1.0, np.nan, 3.0], "measurements must be finite"),
    (np.array([[1.0], [2.0], [3.0]]), [1.0, 2.0], "Y must have one row per point of X"),
    (np.array([[0.0], [2.0], [3.0]]), [1.0, 2.0, 3.0], "parameter values must be finite and positive"),
])
def test_errors(x, y, message):
    with pytest.raises(ModelingError, match=message.replace("(", r"\(")):
        fit_model(x, y)


def test_warns_below_five_values():
    with pytest.warns(FewValuesWarning, match="only 4 distinct values"):
        fit_model(np.array([[1.0], [2.0], [3.0], [4.0]]), [1.0, 2.0, 3.0, 4.0], ["p"])


def test_negative_exponents_only_for_named_parameters():
    x = grid([1, 2, 4, 8, 16.0], V)
    y = 1 + 50 / x[:, 0] + 0.1 * x[:, 1]
    m = fit_model(x, y, ["p", "n"], options=FitOptions(negative_params=("p",)))
    assert terms_text(m) == ["n", "p^-1"]
