"""How sure a model is: lead-term share and prediction intervals from resampled repetitions."""

import numpy as np
import pytest

from perfsweep.modeling import Factor, FitOptions, Model, Term, exponent_pairs, fit_model, fit_models

VALUES = [np.array([4, 8, 16, 32, 64.0]), np.array([10, 20, 30, 40, 50.0])]


def random_functions(rng, q, count):
    """PMNF functions as in bench/modeler_vs_extrap.py: one term per parameter (a product or a sum)."""
    pairs = exponent_pairs()
    out = []
    for _ in range(count):
        factors = [Factor(k, *pairs[rng.integers(len(pairs))]) for k in range(q)]
        terms = [Term(tuple(factors))] if q == 1 or rng.random() < 0.5 else [Term((f,)) for f in factors]
        out.append(Model([f"x{k}" for k in range(q)], terms, np.r_[rng.uniform(1, 100), rng.uniform(0.1, 10, len(terms))]))
    return out


@pytest.mark.parametrize("q, count", [(1, 150), (2, 30)])
def test_90_percent_intervals_cover_the_truth(q, count):
    """At 5 % noise with 5 repetitions, inside the measured range and one step beyond it: a new
    measurement there (the mean of 5 new repetitions) falls within the 90 % interval."""
    rng = np.random.default_rng(42 + q)
    x = np.array(np.meshgrid(*VALUES[:q], indexing="ij")).reshape(q, -1).T
    truths = random_functions(rng, q, count)
    reps = [f.predict(x)[:, None] * (1 + rng.uniform(-0.05, 0.05, (len(x), 5))) for f in truths]
    models = fit_models(x, reps, truths[0].param_names, options=FitOptions(bootstrap=40, seed=1))
    at = np.array([[v[2] for v in VALUES[:q]], [128.0, 60.0][:q]])
    covered = []
    for truth, model in zip(truths, models):
        low, high = model.interval(at, 0.9)
        measured = truth.predict(at) * (1 + rng.uniform(-0.05, 0.05, (len(at), 5))).mean(axis=1)
        covered += list((low <= measured) & (measured <= high))
    print(f"coverage {np.mean(covered):.3f}")
    assert 0.80 <= np.mean(covered) <= 0.97, np.mean(covered)


def test_lead_share_and_runner_up():
    x = VALUES[0]
    exact = fit_model(x, np.repeat((3 + 2 * x ** 1.5)[:, None], 3, axis=1), ["x"], options=FitOptions(bootstrap=20))
    assert exact.lead() == "x^(3/2)" and exact.lead_share == 1.0 and exact.runner_up == ""
    rng = np.random.default_rng(0)
    # x^(1/4) and log2(x) are hard to tell apart over 4..64 under 10 % noise: the share says so
    noisy = fit_model(x, (20 + 2 * x ** 0.25)[:, None] * (1 + rng.uniform(-0.1, 0.1, (5, 5))), ["x"],
                      options=FitOptions(bootstrap=40))
    assert noisy.lead_share < 0.9 and noisy.runner_up and 0 < noisy.runner_up_share <= noisy.lead_share
    back = Model.from_dict(noisy.to_dict())
    assert back.lead_share == noisy.lead_share and back.runner_up == noisy.runner_up
    np.testing.assert_allclose(back.interval([[128.0]]), noisy.interval([[128.0]]))


def test_no_resamples_without_repetitions():
    m = fit_model(VALUES[0], 3 + 2 * VALUES[0], ["x"], options=FitOptions(bootstrap=20))
    assert m.bootstrap == [] and np.isnan(m.lead_share) and np.isnan(m.interval([128.0])[0]).all()


def test_resampling_is_reproducible():
    rng = np.random.default_rng(5)
    y = (5 + VALUES[0])[:, None] * (1 + rng.uniform(-0.05, 0.05, (5, 4)))
    a, b = (fit_model(VALUES[0], y, ["x"], options=FitOptions(bootstrap=10, seed=7)) for _ in range(2))
    np.testing.assert_array_equal(a.interval([[100.0]]), b.interval([[100.0]]))


def test_intervals_widen_where_the_forms_the_data_cannot_tell_apart_part():
    """Model averaging over forms (Model.form_spread): 20 + 2 x^(1/2) over x = 4..64 under 5 % noise
    fits x^(1/3), x^(1/4) log2(x) and log2(x)^2 nearly as well; they part beyond the grid, so the
    interval is wider there with the forms' spread than without it, and wider the further out; inside
    the grid they agree within 2 %."""
    x = VALUES[0]
    rng = np.random.default_rng(0)
    m = fit_model(x, (20 + 2 * x ** 0.5)[:, None] * (1 + rng.uniform(-0.05, 0.05, (5, 3))), ["x"],
                  options=FitOptions(bootstrap=40))
    assert m.alternatives and all(a.criterion >= 0 for a in m.alternatives) and np.isfinite(m.criterion)
    assert min([m.criterion] + [a.criterion for a in m.alternatives]) == 0  # the best admissible form's
    at = np.array([[16.0], [128.0], [512.0]])
    spread = m.form_spread(at, 1.0)
    assert spread[0] < 0.02 and 3 * spread[0] < spread[1] and 3 * spread[1] < spread[2]
    low0, high0 = m.interval(at, 0.9, temperature=0)
    low1, high1 = m.interval(at, 0.9, temperature=1.0)
    assert np.all(high1 - low1 >= high0 - low0 - 1e-12)  # never narrower
    # issue 44's case: every resample chose the one form (their spread is nil); beyond the grid the
    # forms' spread widens the interval, inside it hardly
    m.bootstrap = [Model(m.param_names, m.terms, m.coefficients.copy()) for _ in range(10)]
    low0, high0 = m.interval(at, 0.9, temperature=0)
    low1, high1 = m.interval(at, 0.9, temperature=1.0)
    ratio = (high1 - low1) / (high0 - low0)
    assert ratio[0] < 1.2 and ratio[2] > 1.5 and ratio[2] > ratio[1] > 1.05, ratio
    # a hotter temperature weighs the worse-fitting forms more
    assert m.form_spread(at, 4.0)[2] > m.form_spread(at, 0.25)[2]
    back = Model.from_dict(m.to_dict())
    assert [str(a) for a in back.alternatives] == [str(a) for a in m.alternatives]
    np.testing.assert_allclose(back.interval(at), m.interval(at))


def test_form_spread_weighs_by_the_criterion():
    """Two alternatives by hand: one 10 % above the model everywhere at criterion 0 (as good), one
    100 % above at criterion 40 (excluded in effect): the spread is the first's log departure, weighted
    1/2 (the model's own criterion 0, the same weight)."""
    term = Term((Factor(0, 1, 0),))
    own = Model(["x"], [term], np.array([0.0, 1.0]), criterion=0.0)
    own.alternatives = [Model(["x"], [term], np.array([0.0, 1.1]), criterion=0.0),
                        Model(["x"], [term], np.array([0.0, 2.0]), criterion=40.0)]
    spread = own.form_spread(np.array([[10.0]]), 1.0)
    assert spread[0] == pytest.approx(np.sqrt(0.5 * np.log(1.1) ** 2), rel=1e-6)
    assert own.form_spread(np.array([[10.0]]), 0.0) is None
    assert Model(["x"], [term], np.array([0.0, 1.0])).form_spread(np.array([[10.0]])) is None
