import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from perfsweep.modeling import (FewValuesWarning, FitOptions, Model, ModelingError, Term, dominant_terms, fit_model,
                                 fit_models)
from perfsweep.modeling.model import fill_statistics
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
    (lambda p: 3 + 2 * p ** 1.5 * np.log2(p), ["p^(3/2) * log2(p)"]),
    (lambda p: 10 + 0.5 * p ** 2, ["p^2"]),
    (lambda p: 1 + 4 * np.log2(p) ** 2, ["log2(p)^2"]),
    (lambda p: 7 + 0.1 * p ** (1 / 3), ["p^(1/3)"]),
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
    assert terms_text(m) == ["p^(-1)"]


def test_dominant_terms():
    a2 = Term((Factor(0, F(2), 0),))
    a1log = Term((Factor(0, F(1), 1),))
    b = Term((Factor(1, F(1), 0),))
    assert dominant_terms([a2, a1log]) == {a2}
    assert dominant_terms([a2, b]) == {a2, b}


@pytest.mark.parametrize("x, y, message", [
    (np.array([[1.0], [2.0]]), [1.0, 2.0], "parameter x0 has 2 distinct values; at least 3 are needed"),
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
    assert terms_text(m) == ["n", "p^(-1)"]


def test_structures_contain_extrap_combinations():
    from perfsweep.modeling.structures import structures
    assert set(structures(2)) == {((0, 1),), ((0, 1), (0,)), ((0, 1), (1,)), ((0, 1), (0,), (1,)), ((0,), (1,))}
    s3 = {frozenset(st) for st in structures(3)}
    abc, ab, bc, ac, a, b, c = (0, 1, 2), (0, 1), (1, 2), (0, 2), (0,), (1,), (2,)
    extrap = [(abc,), (a, b, c), (abc, a), (abc, b), (abc, c), (abc, ab), (abc, bc), (abc, ac), (abc, ab, c),
              (abc, bc, a), (abc, ac, b), (abc, a, b), (abc, a, c), (abc, b, c), (ab, c), (ab, c, b), (ab, c, a),
              (ac, b), (ac, b, a), (ac, b, c), (bc, a), (bc, a, b), (bc, a, c)]
    assert len(extrap) == 23 and all(frozenset(st) in s3 for st in extrap)
    assert len(structures(3)) == 35


@pytest.mark.parametrize("f, expected", [
    (lambda a, b: 3 + 0.2 * a ** 2 * np.log2(b) + 5 * a, ["a", "a^2 * log2(b)"]),
    (lambda a, b: 1 + 2 * np.log2(a) ** 2 + 0.01 * b ** 3, ["b^3", "log2(a)^2"]),
])
def test_recovers_two_parameter_sums_exactly(f, expected):
    x = grid(V, [10, 20, 30, 40, 50.0])
    m = fit_model(x, f(x[:, 0], x[:, 1]), ["a", "b"])
    assert terms_text(m) == expected
    assert m.predict(x) == pytest.approx(f(x[:, 0], x[:, 1]), rel=1e-8)


def test_recovers_three_parameter_sum_with_logs_exactly():
    x = grid(V, [1, 2, 3, 4, 5.0], [10, 20, 30, 40, 50.0])
    y = 7 + 3 * x[:, 0] * np.log2(x[:, 0]) + 2 * x[:, 1] ** 0.5 + 0.5 * x[:, 2] * np.log2(x[:, 2]) ** 2
    m = fit_model(x, y, ["a", "b", "c"])
    assert terms_text(m) == ["a * log2(a)", "b^(1/2)", "c * log2(c)^2"]


def test_batched_fit_equals_one_at_a_time():
    x = grid(V, [10, 20, 30, 40, 50.0])
    rng = np.random.default_rng(1)
    ys = [(2 + x[:, 0] * x[:, 1])[:, None] * rng.uniform(0.97, 1.03, (25, 4)),
          (5 + np.log2(x[:, 0]) + x[:, 1] ** 2)[:, None] * rng.uniform(0.97, 1.03, (25, 4)),
          10 + 0.1 * x[:, 0] ** 1.5]
    batch = fit_models(x, ys, ["a", "b"])
    for y, m in zip(ys, batch):
        single = fit_model(x, y, ["a", "b"])
        assert str(m) == str(single) and m.cv_score == pytest.approx(single.cv_score)
    assert terms_text(batch[2]) == ["a^(3/2)"]


@pytest.mark.parametrize("q", [1, 2, 3])
def test_batch_statistics_equal_those_of_each_model_alone(q):
    # a batch's statistics are computed for all models at once: bit for bit what each model's own
    # predictions give (the largest mean is exactly 1, so the models are in the fitted units)
    x = grid(*[V, [10, 20, 30, 40, 50.0], [100, 200, 300, 400, 500.0]][:q])
    rng = np.random.default_rng(q)
    ys = []
    for k in range(30):
        y = 2 + rng.uniform(0.1, 10) * x[:, k % q] ** rng.choice([0.5, 1, 2]) + (x[:, -1] * x[:, 0] if k % 3 else 0)
        reps = y[:, None] * rng.uniform(0.95, 1.05, (len(x), 5)) if k % 4 else y[:, None] * np.ones((1, 5))
        reps = reps / reps.mean(axis=1).max()
        reps[np.argmax(reps.mean(axis=1))] = 1.0
        ys.append(reps)
    models = fit_models(x, ys, ["a", "b", "c"][:q])
    for m, y in zip(models, ys):
        assert np.array_equal(m.values, np.nanmean(y, axis=1))
        alone = Model(m.param_names, m.terms, m.coefficients)
        fill_statistics(alone, m.values, alone.predict(x))
        assert (m.rss, m.r2, m.smape) == (alone.rss, alone.r2, alone.smape)
        assert m.adj_r2 == alone.adj_r2 or np.isnan(m.adj_r2) and np.isnan(alone.adj_r2)
    assert len({str(m) for m in models}) > 10


def test_finds_dominant_term_under_noise():
    # the benchmark's setting: 5 repetitions with uniform multiplicative noise of +-5 %
    x = grid(V, [10, 20, 30, 40, 50.0])
    truth = 20 + 0.5 * x[:, 0] ** 2 * x[:, 1] + 3 * x[:, 0]
    reps = truth[:, None] * (1 + np.random.default_rng(7).uniform(-0.05, 0.05, (25, 5)))
    m = fit_model(x, reps, ["a", "b"])
    assert {t.text(m.param_names) for t in dominant_terms(m.terms)} == {"a^2 * b"}
    assert m.predict([[64.0, 60.0]])[0] == pytest.approx(20 + 0.5 * 64 ** 2 * 60 + 3 * 64, rel=0.05)


def test_term_coefficients_are_positive():
    # time that falls with x has no PMNF cost term (without negative exponents): a constant model
    x = np.array(V)[:, None]
    m = fit_model(x, 100 - 3 * np.log2(x[:, 0]), ["x"])
    assert m.terms == [] and m.coefficients == pytest.approx([100 - 3 * np.mean(np.log2(V))], rel=0.05)
    free = fit_model(x, 100 - 3 * np.log2(x[:, 0]), ["x"], options=FitOptions(positive=False))
    assert terms_text(free) == ["log2(x)"] and free.coefficients[1] == pytest.approx(-3)


def test_small_term_beside_large_one_is_kept_without_noise():
    # the a-term is 6 % of the smallest measurement and 1e-4 of the largest
    x = grid(V, [1, 2, 3, 4, 5.0], [10, 20, 30, 40, 50.0])
    y = 50 + 5 * x[:, 0] ** 0.25 + 2 * x[:, 1] ** 2 * x[:, 2] ** 2
    m = fit_model(x, y, ["a", "b", "c"])
    assert terms_text(m) == ["a^(1/4)", "b^2 * c^2"]


@pytest.mark.parametrize("f, expected", [
    (lambda n, p: 0.5 + 1e-3 * n / p + 0.2 * np.log2(p), ["log2(p)", "n * p^(-1)"]),
    (lambda n, p: 0.5 + 1e-3 * n / p + 0.01 * p, ["n * p^(-1)", "p"]),
    (lambda n, p: 1e-3 * n * np.log2(n) / p + 0.05 * np.log2(p) ** 2, ["log2(p)^2", "n * log2(n) * p^(-1)"]),
    (lambda n, p: 2 + 1e-6 * n ** 2 / p + 0.1 * n ** 0.5, ["n^(1/2)", "n^2 * p^(-1)"]),
])
def test_recovers_strong_scaling_models_exactly(f, expected):
    # work divided over p beside an overhead that grows with p: p takes different exponents in two terms
    x = grid([1000, 2000, 4000, 8000, 16000.0], [1, 2, 4, 8, 16, 32.0])
    y = f(x[:, 0], x[:, 1])
    m = fit_model(x, y, ["n", "p"], options=FitOptions(negative_params=("p",)))
    assert terms_text(m) == expected
    assert m.predict([[32000.0, 64.0]])[0] == pytest.approx(f(32000.0, 64.0), rel=1e-6)


def test_strong_scaling_model_under_noise():
    x = grid([1000, 2000, 4000, 8000, 16000.0], [1, 2, 4, 8, 16, 32.0])
    y = 0.5 + 1e-3 * x[:, 0] / x[:, 1] + 0.2 * np.log2(x[:, 1])
    reps = y[:, None] * (1 + np.random.default_rng(3).uniform(-0.05, 0.05, (30, 5)))
    m = fit_model(x, reps, ["n", "p"], options=FitOptions(negative_params=("p",)))
    assert terms_text(m) == ["log2(p)", "n * p^(-1)"]
    assert m.coefficients == pytest.approx([0.5, 1e-3, 0.2], rel=0.05)


# issue 15's smaller defects ---------------------------------------------------------------------
X5 = np.array([4, 8, 16, 32, 64.0])


def test_model_text_is_unambiguous():
    m = fit_model(X5, 3 + 2 * X5 ** 1.5, ["x"])
    assert str(m) == "3 + 2 * x^(3/2)"  # not x^3/2, which reads as (x^3)/2
    assert Term((Factor(0, F(-1), 0), Factor(1, F(2), 1))).text(["p", "n"]) == "p^(-1) * n^2 * log2(n)"


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_fit_is_scale_invariant(scale):
    m = fit_model(X5, scale * (3 + 2 * X5 ** 1.5), ["x"])
    assert terms_text(m) == ["x^(3/2)"]
    np.testing.assert_allclose(m.coefficients, [3 * scale, 2 * scale], rtol=1e-9)
    np.testing.assert_allclose(m.predict([128.0]), scale * (3 + 2 * 128 ** 1.5), rtol=1e-9)


def test_all_zeros_is_the_model_zero():
    m = fit_model(X5, np.zeros((5, 3)), ["x"])
    assert str(m) == "0" and m.terms == [] and m.predict([1000.0])[0] == 0


def test_zeros_and_negative_values_are_modelled():
    count = fit_model(X5, 2 * X5 - 8, ["x"])  # a count that is 0 at the first point
    assert terms_text(count) == ["x"]
    np.testing.assert_allclose(count.coefficients, [-8, 2], atol=1e-9)
    falling = fit_model(X5, 1 - 0.5 * np.log2(X5), ["x"])  # negative values: terms may fall
    assert terms_text(falling) == ["log2(x)"]
    np.testing.assert_allclose(falling.coefficients, [1, -0.5], atol=1e-9)


def test_no_terms_below_the_fitting_floor_on_exact_data():
    m = fit_model(X5, 5 * X5 * np.log2(X5), ["x"])
    assert m.coefficients[0] == 0 and str(m) == "5 * x * log2(x)"
    a, b = np.meshgrid([4, 8, 16, 32, 64.0], [10, 20, 30, 40, 50.0])
    x = np.c_[a.ravel(), b.ravel()]
    m2 = fit_model(x, 2 * x[:, 0] * x[:, 1], ["a", "b"])
    assert str(m2) == "2 * a * b"


def test_one_bad_set_does_not_fail_the_batch():
    good = 3 + 2 * X5
    with pytest.warns(UserWarning, match="measurement set 1: measurements must be finite"):
        out = fit_models(X5, [good, np.r_[1.0, np.nan, 3, 4, 5], good[:4], good], ["x"])
    assert out[1] is None and out[2] is None
    assert str(out[0]) == str(out[3]) == "3 + 2 * x"
    with pytest.raises(ModelingError, match="finite"):  # one set alone: the error itself
        fit_model(X5, np.r_[1.0, np.inf, 3, 4, 5])


def test_missing_repetitions_are_nan():
    reps = np.c_[3 + 2 * X5, 3 + 2 * X5, [np.nan, 19, np.nan, 67, 131]]
    assert str(fit_model(X5, reps, ["x"])) == "3 + 2 * x"


def test_predict_one_parameter_model_at_several_values():
    m = fit_model(X5, 3 + 2 * X5, ["x"])
    np.testing.assert_allclose(m.predict([128, 256]), [259, 515])
    np.testing.assert_allclose(m.predict(128), [259])


def test_no_constant_under_rising_real_data():
    """IntelMPI MPI_Barrier max (Extra-P's example data) rises from 478 to 6448 with large scatter:
    relative weights alone chose the constant 441 (adjusted R^2 -0.84)."""
    import pandas as pd

    from perfsweep.layout import REPO_ROOT

    mpi = pd.read_csv(REPO_ROOT / "resources" / "reference-data" / "extrap" / "mpi_collectives_1p.csv")
    sel = mpi[(mpi["mpi"] == "IntelMPI") & (mpi["variable"] == "MPI_Barrier")].sort_values("Ranks")
    x, y = sel["Ranks"].to_numpy(float), sel["max"].to_numpy(float)
    m = fit_model(x, y, ["Ranks"])
    assert m.terms and m.adj_r2 > 0.8
    # its leave-one-out score (relative, as the others'): the line in its term refitted without each point
    t = m.terms[0].values(x[:, None])
    loo = [(y[i] - np.polyval(np.polyfit(np.delete(t, i), np.delete(y, i), 1), t[i])) / y[i] for i in range(len(y))]
    assert m.cv_score == pytest.approx(np.mean(np.square(loo)), rel=1e-9)


# point sets that are not a full grid (issue 15) -------------------------------------------------
def test_grid_with_a_hole():
    """The issue's example: without (64, 50) the marginal means gave -24 + 1.73*a^7/4 + 12.2*b^1/4."""
    a, b = np.meshgrid([4, 8, 16, 32, 64.0], [10, 20, 30, 40, 50.0], indexing="ij")
    x = np.c_[a.ravel(), b.ravel()][:-1]
    m = fit_model(x, 2.36 + 0.8 * x[:, 0] ** 1.75 * x[:, 1] ** 0.25, ["a", "b"])
    assert terms_text(m) == ["a^(7/4) * b^(1/4)"]
    np.testing.assert_allclose(m.predict([[128, 60]]), 2.36 + 0.8 * 128 ** 1.75 * 60 ** 0.25, rtol=1e-6)


@pytest.mark.parametrize("f, expected", [
    (lambda a, b, c: 5 + 2 * a * np.log2(a) * c ** 0.5 + 0.3 * b ** 2, ["a * log2(a) * c^(1/2)", "b^2"]),
    (lambda a, b, c: 1 + 0.01 * a ** 1.5 * b * c ** (1 / 3), ["a^(3/2) * b * c^(1/3)"]),
    (lambda a, b, c: 3 + a + np.log2(b) ** 2 + 0.5 * c ** 0.75, ["a", "c^(3/4)", "log2(b)^2"]),
    # b^(1/4) changes the values by 1e-6 beside c^3 log2(c): below the normal equations' resolution
    (lambda a, b, c: 67 + 5 * a ** 2 * np.log2(a) ** 2 + b ** 0.25 + 2.4 * c ** 3 * np.log2(c),
     ["a^2 * log2(a)^2", "b^(1/4)", "c^3 * log2(c)"]),
])
def test_sparse_cross(f, expected):
    """Extra-P's sparse layout: one line of 5 values per parameter through the smallest values of the
    others, plus 2 diagonal points (15 points for 3 parameters instead of 125)."""
    values = [np.array([4, 8, 16, 32, 64.0]), np.array([10, 20, 30, 40, 50.0]), np.array([100, 200, 300, 400, 500.0])]
    base = np.array([v[0] for v in values])
    points = [base] + [np.where(np.arange(3) == k, v, base) for k in range(3) for v in values[k][1:]]
    x = np.array(points + [np.array([v[i] for v in values]) for i in (2, 4)])
    assert sorted(terms_text(fit_model(x, f(*x.T), ["a", "b", "c"]))) == expected


def test_random_points():
    rng = np.random.default_rng(4)
    a, b = np.meshgrid([4, 8, 16, 32, 64.0], [10, 20, 30, 40, 50.0], indexing="ij")
    full = np.c_[a.ravel(), b.ravel()]
    x = full[np.sort(rng.choice(len(full), 13, replace=False))]
    assert all(len(np.unique(x[:, k])) == 5 for k in range(2))
    m = fit_model(x, 7 + 0.5 * x[:, 0] ** (2 / 3) * np.log2(x[:, 0]) + 0.2 * x[:, 1] ** 1.25, ["a", "b"])
    assert sorted(terms_text(m)) == ["a^(2/3) * log2(a)", "b^(5/4)"]


def test_study_models_fit_repetitions_and_say_how_sure():
    """The pipeline: every repetition from the aggregate's values column, resamples, intervals, the
    process parameter stored; an all-zero metric is the model 0; a metric with a missing point gets a
    reason while the others are modelled."""
    import pandas as pd

    from perfsweep.modeling.pipeline import fit_study_models

    rng = np.random.default_rng(8)
    n, p = np.meshgrid([1000, 2000, 3000, 4000, 5000.0], [1, 2, 3, 4, 5.0], indexing="ij")
    pts = pd.DataFrame({"n": n.ravel(), "p": p.ravel()})
    pts["config_id"] = [f"n={a}_p={b}" for a, b in zip(pts["n"], pts["p"])]
    rows = []
    for metric, f in (("time", lambda d: 0.2 + 1e-3 * d["n"] / d["p"]), ("io", lambda d: 0 * d["n"]),
                      ("comm", lambda d: 0.01 * np.log2(d["p"]) + 0.01)):
        reps = f(pts).to_numpy()[:, None] * (1 + rng.uniform(-0.03, 0.03, (len(pts), 3)))
        values = [" ".join(repr(float(v)) for v in r) for r in reps]
        if metric == "comm":
            values[3] = ""  # every run of a point failed
        rows.append(pts.assign(region="all", metric=metric, median=np.median(reps, axis=1), values=values))
    table, models, preds = fit_study_models(pd.concat(rows, ignore_index=True), "np", ["n", "p"], {}, "p",
                                            bootstrap=20)
    by = table.set_index("metric")
    assert by.loc["time", "model"].count("p^(-1)") == 1 and 0 < by.loc["time", "lead_share"] <= 1
    assert by.loc["io", "model"] == "0"
    assert by.loc["comm", "model"] == "" and "missing" in by.loc["comm", "reason"]
    assert {"lead", "lead_share", "runner_up", "runner_up_share"} <= set(table.columns)
    time_pred = preds[preds["metric"] == "time"]
    assert (time_pred["low"] < time_pred["predicted"]).all() and (time_pred["predicted"] < time_pred["high"]).all()
    entry = next(m for m in models if m["metric"] == "time")
    assert entry["processes"] == "p" and len(entry["model"]["bootstrap"]) == 20
    np.testing.assert_allclose(entry["model"]["values"], np.mean(
        [[float(v) for v in s.split()] for s in rows[0]["values"]], axis=1))


def _best_single_term_adj_r2(x, y):
    """The best adjusted R^2 of c0 + c1 * t, t a product of one pair per parameter, c1 > 0."""
    from perfsweep.modeling.fit_core import term_values

    n = len(y)
    cols = [np.vstack([np.ones(n), term_values(x[:, k], exponent_pairs())]) for k in range(x.shape[1])]
    terms = cols[0]
    for c in cols[1:]:
        terms = (terms[:, None, :] * c[None, :, :]).reshape(-1, n)
    tc, yc = terms[1:] - terms[1:].mean(axis=1, keepdims=True), y - y.mean()
    stt, sty = np.sum(tc * tc, axis=1), tc @ yc
    ok = (stt > 1e-12 * np.sum(terms[1:] ** 2, axis=1)) & (sty > 0)
    r2 = np.where(ok, sty ** 2 / np.where(ok, stt * (yc @ yc), 1.0), 0.0).max()
    return 1 - (1 - r2) * (n - 1) / (n - 2)


def test_real_data_models_explain_as_much_as_a_single_term():
    """Extra-P's example data (RELeARN, MPI collectives): no chosen model has an adjusted R^2 more
    than 0.001 below the best single-term model's (bench/modeler_real_data.py prints the rest)."""
    import pandas as pd

    from perfsweep.layout import REPO_ROOT
    from perfsweep.modeling.extrap_io import read_extrap

    data = REPO_ROOT / "resources" / "reference-data" / "extrap"
    df, params = read_extrap(data / "relearn_2p_text.txt")
    sets = []
    for _, g in df.groupby(["region", "metric"]):
        wide = g.pivot_table(index=params, columns="repetition", values="value").sort_index()
        sets.append((np.array(list(wide.index), dtype=float), wide.to_numpy(float), params))
    mpi = pd.read_csv(data / "mpi_collectives_1p.csv").sort_values("Ranks")
    for _, g in mpi.groupby(["mpi", "variable"]):
        sets += [(g[["Ranks"]].to_numpy(float), g[metric].to_numpy(float), ["Ranks"])
                 for metric in ("mean", "median", "min", "max")]
    assert len(sets) == 14 + 56
    for x, y, names in sets:
        m = fit_model(x, y, names)
        assert m.adj_r2 >= _best_single_term_adj_r2(x, np.atleast_2d(y.T).T.mean(axis=1)) - 1e-3, str(m)


@pytest.mark.slow
def test_own_sweeps_models_explain_as_much_as_a_single_term():
    """perfsweep's own sweeps (resources/reference-data/perfsweep-sweeps: the default config's ljmd and
    RMSD studies, all repetitions): the same rule for every (region, metric) the pipeline models."""
    import pandas as pd

    from perfsweep.layout import REPO_ROOT
    from perfsweep.modeling.pipeline import UNMODELLED, repetitions

    paths = sorted((REPO_ROOT / "resources" / "reference-data" / "perfsweep-sweeps").glob("*/*.csv"))
    assert len(paths) >= 8  # two runs of the four studies
    checked = 0
    for path in paths:
        agg = pd.read_csv(path)
        cols = list(agg.columns)
        params = cols[cols.index("config_id") + 1: cols.index("region")]
        groups = [g.sort_values(params) for (_, metric), g in agg.groupby(["region", "metric"]) if metric not in UNMODELLED]
        x = groups[0][params].to_numpy(float)
        ys = [repetitions(g) for g in groups]
        for y, m in zip(ys, fit_models(x, ys, params)):
            assert m.adj_r2 >= _best_single_term_adj_r2(x, np.nanmean(y, axis=1)) - 1e-3, (path.name, str(m))
            checked += 1
    assert checked >= 80


# ljmd's T(n, m, c) on its full 5 x 5 x 5 grid (bench/designs.py, 3 repetitions, measured 2026-11-25 on the
# machine that measured tests/data/designs): the lead orders of its run-time and step/forces models
FULL_GRID_LEAD = {"time": {"n": (Fraction(3, 4), 2), "m": (Fraction(2), 0), "c": (Fraction(8, 3), 0)},
                  "forces": {"n": (Fraction(3, 4), 2), "m": (Fraction(2), 0), "c": (Fraction(11, 4), 0)}}


def sparse_ljmd_aggregate(name):
    import pandas as pd

    runs = pd.read_csv(Path(__file__).parent / "data" / "designs" / name)
    rows = []
    for (n, m, c), g in runs.groupby(["n", "m", "c"]):
        for region, column in (("all", "time"), ("step/forces", "forces")):
            rows.append({"config_id": f"n={n}_m={m}_c={c}", "n": n, "m": m, "c": c, "region": region,
                         "metric": "time", "median": g[column].median(),
                         "values": " ".join(repr(v) for v in g[column])})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("name", ["ljmd_sparse_ccd_1.csv", "ljmd_sparse_ccd_2.csv", "ljmd_sparse_largest_1.csv",
                                  "ljmd_sparse_largest_2.csv"])
def test_a_sparse_designs_models_grow_like_the_full_grids_on_measured_data(name):
    """Real measurements of two sparse designs (tests/data/designs/README.md): lines through the
    grid's centre and its 8 corners (21 configurations, the default config's until 2026-11-26), and
    lines through its largest values with 4 extra points (17, the default config's since), fitted as
    the models stage fits a sparse design (one lower-order term beside a product; m and c, a count
    from 1 and a cut-off in sigma, with powers only): the step/forces and run-time models reach a
    full grid's growth (per parameter the largest order's growth over the grid's range within 1/4 of a
    power: alike over the grid, not the strict same lead order). Through the centre, the
    step/forces model has the part of the work that no site adds (the work per molecule pair) as a
    lower-order term without m."""
    from perfsweep.modeling.lead_orders import format_orders, growth, lead_orders, measured_ranges
    from perfsweep.modeling.pipeline import fit_options, fit_study_models

    assert fit_options("p", "sparse").extra_terms == fit_options("p", "adaptive").extra_terms == 1
    assert fit_options("p", "full").extra_terms == FitOptions().extra_terms
    agg = sparse_ljmd_aggregate(name)
    _, models, _ = fit_study_models(agg, "T_n_m_c", ["n", "m", "c"], {}, "p", bootstrap=0, design="sparse")
    assert {m["design"] for m in models} == {"sparse"}
    found = {e["region"]: Model.from_dict(e["model"]) for e in models}
    for region, key in (("step/forces", "forces"), ("all", "time")):
        model = found[region]
        orders, ranges = lead_orders(model), measured_ranges(model)
        assert all(abs(growth(orders[n], *ranges[n]) - growth(FULL_GRID_LEAD[key][n], *ranges[n])) <= 0.25 + 1e-12
                   for n in orders), format_orders(model)
    forces = found["step/forces"]
    if "ccd" in name:
        assert len(forces.terms) == 2 and any(all(f.param != 1 for f in t.factors) for t in forces.terms), str(forces)


@pytest.mark.parametrize("design, size", [({"kind": "sparse", "base": "centre", "extra": 8}, 21),
                                          ({"kind": "sparse", "base": "largest", "extra": 4}, 17)])
def test_one_lower_order_term_finds_a_part_that_does_not_grow_with_one_parameter(design, size):
    """T = 0.02 + 2e-7 n m^2 c^3 + 3e-7 n c^3 (work per molecule pair with and without its sites, as in
    ljmd) measured with 3 % noise on a sparse design (lines through the centre and the 8 corners; lines
    through the largest values and 4 extra points, the default config's), 8 times: with the models
    stage's sparse options (one lower-order term beside the product) the model grows like m^2 and
    extrapolates to n 1200-1400, m 6-7, c 2.75-3; a single product bends m to m^(7/4) and predicts
    several times worse there."""
    from dataclasses import replace

    from perfsweep.config import load_config
    from perfsweep.modeling.lead_orders import lead_orders
    from perfsweep.modeling.pipeline import fit_options

    values = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5], "c": [1.5, 1.75, 2.0, 2.25, 2.5]}
    study = load_config({"app": {"name": "ljmd"}, "parameters": {"n": 600, "m": 3, "d": 0.5, "c": 2.0, "p": 1},
                         "studies": {"s": {"vary": values, "design": design}}}).study("s")
    x = np.array([[c.params[k] for k in values] for c in study.configurations()], float)
    assert len(x) == size
    beyond = np.array(list(itertools.product([1200, 1400], [6, 7], [2.75, 3.0])), float)

    def truth(p):
        return 0.02 + 2e-7 * p[:, 0] * p[:, 1] ** 2 * p[:, 2] ** 3 + 3e-7 * p[:, 0] * p[:, 2] ** 3

    options = fit_options("p", "sparse", bootstrap=0, points=x, names=["n", "m", "c"])
    squares, errors = {1: 0, 0: 0}, {1: [], 0: []}
    for seed in range(8):
        reps = truth(x)[:, None] * (1 + np.random.default_rng(seed).uniform(-0.03, 0.03, (len(x), 3)))
        for extra in (1, 0):
            model = fit_model(x, reps, ["n", "m", "c"], options=replace(options, extra_terms=extra))
            squares[extra] += lead_orders(model)["m"] == (2, 0)
            errors[extra].append(np.mean(np.abs(model.predict(beyond) / truth(beyond) - 1)))
    assert squares[1] >= 6 > 2 >= squares[0], squares
    assert np.median(errors[1]) < 0.25 * np.median(errors[0]), errors


def test_quantities_in_a_unit_and_counts_from_one_get_powers_only():
    """power_parameters: a parameter with a value that is not a whole number (the cut-off c, in sigma)
    and a count measured at 1 (sites m) get no log2 factors; counts from 2 (n) and the process count,
    also from 1, keep them."""
    from perfsweep.modeling.pipeline import power_parameters

    x = grid([200, 1000], [1, 5], [1.5, 2.5], [1, 4])
    assert power_parameters(x, ["n", "m", "c", "p"], "p") == ("m", "c")
    assert power_parameters(x, ["n", "m", "c", "q"], "p") == ("m", "c", "q")
    assert power_parameters(grid([2, 8], [0.5, 1.0]), ["n", "d"]) == ("d",)
    assert len(exponent_pairs(logs=False)) == 19 and all(j == 0 for _, j in exponent_pairs(logs=False))


def test_one_repetition_per_point_is_modelled():
    """With k = 1 every cell of the aggregate's values column is one number, and read back from CSV
    the column is numeric: each point's repetition is still its value (it was NaN: no model at all)."""
    import io

    import pandas as pd

    from perfsweep.modeling.pipeline import repetitions

    agg = pd.read_csv(io.StringIO("median,values\n0.5,0.5\n2,2\n3,\n"))
    assert agg["values"].dtype.kind == "f"
    np.testing.assert_array_equal(repetitions(agg), [[0.5], [2.0], [np.nan]])
    mixed = pd.read_csv(io.StringIO("median,values\n0.5,0.5 0.7\n2,2\n"))
    np.testing.assert_array_equal(repetitions(mixed), [[0.5, 0.7], [2.0, np.nan]])


def test_the_config_overrides_which_parameters_get_powers_only():
    """modeling: log_factors gives a count from 1 its log2 factors back, powers_only takes them from
    any parameter: threads t = 1-16 with a reduction tree's cost t log2(t) is found only with them."""
    from perfsweep.modeling.pipeline import fit_options

    x = grid([1, 2, 4, 8, 16], [200, 400, 600, 800, 1000])
    assert fit_options("p", points=x, names=["t", "n"]).power_params == ("t",)
    assert fit_options("p", points=x, names=["t", "n"], modeling={"log_factors": ["t"]}).power_params == ()
    assert fit_options("p", points=x, names=["t", "n"],
                       modeling={"log_factors": ["t"], "powers_only": ["n"]}).power_params == ("n",)
    y = 1e-3 * x[:, 1] + 2e-4 * x[:, 0] * np.log2(x[:, 0]) * x[:, 1]
    for modeling, logs in (({}, False), ({"log_factors": ["t"]}, True)):
        model = fit_model(x, y, ["t", "n"], options=fit_options("p", points=x, names=["t", "n"], modeling=modeling))
        assert any(f.j > 0 for t in model.terms for f in t.factors if f.param == 0) is logs, str(model)


def test_a_power_only_parameter_gets_no_log_factor_in_any_term():
    """T = 2e-3 n^(3/4) log2(n)^2 (c + 0.47)^3 (ljmd's pairs within the Verlet reach) with 3 % noise,
    8 times: with c searched as a count, some models take log2(c)^2 (which fits the bend near c = 1.5
    as well as a power does, and extrapolates worse); with c power-only none does, n keeps its log
    factors, and every model predicts n 1200-1400, c 2.75-3 within 3 %."""
    x = grid([200, 400, 600, 800, 1000], [1.5, 1.75, 2.0, 2.25, 2.5])
    beyond = grid([1200, 1400], [2.75, 3.0])

    def truth(p):
        return 2e-3 * p[:, 0] ** 0.75 * np.log2(p[:, 0]) ** 2 * (p[:, 1] + 0.47) ** 3

    c_logs = {False: 0, True: 0}
    for seed in range(8):
        reps = truth(x)[:, None] * (1 + np.random.default_rng(seed).uniform(-0.03, 0.03, (len(x), 3)))
        for powers in (False, True):
            model = fit_model(x, reps, ["n", "c"], options=FitOptions(power_params=("c",) if powers else ()))
            c_logs[powers] += any(f.j > 0 for t in model.terms for f in t.factors if f.param == 1)
            if powers:
                assert any(f.j > 0 for t in model.terms for f in t.factors if f.param == 0), str(model)
                assert np.max(np.abs(model.predict(beyond) / truth(beyond) - 1)) < 0.03, str(model)
    assert c_logs[True] == 0 < c_logs[False], c_logs


def test_a_metric_the_same_at_every_point_is_a_constant():
    """A metric that does not change (a count, the same at every point and in every repetition) is the
    constant, with no single term put in its place (fit_stats.plausible has nothing to explain)."""
    x = np.array([[n, m] for n in (100.0, 200.0, 300.0) for m in (1.0, 2.0, 3.0)])
    model = fit_model(x, np.full((len(x), 3), 42.0), ["n", "m"])
    assert model.terms == [] and float(model.coefficients[0]) == pytest.approx(42.0)
