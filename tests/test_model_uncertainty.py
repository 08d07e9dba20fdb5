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


# ---- where the host was quiet (FitOptions.drift, modeling.fit_resample): the form's scatter is not drift

def law_between_forms(n, m):
    """A cost between PMNF forms in m (sites within a reach that grows with m, as ljmd's): the models
    leave a few per cent around it that no measurement removes."""
    return 0.02 + 3e-6 * n * m ** 2 * (1 + 0.3 * np.sin(1.7 * m)) + 1e-5 * n


def between_forms_sweep(rng):
    x = np.array([[n, m] for n in (400, 800, 1200, 1600, 2000) for m in (1, 2, 3, 4, 5)], float)
    y = law_between_forms(*x.T)[:, None] * np.exp(rng.normal(0, 0.005, (len(x), 3)))  # 0.5 % between runs
    return x, y


def test_a_quiet_hosts_points_decide_the_form_by_their_repetitions_and_widen_the_intervals_by_the_form():
    """The same data fitted as of an unknown host (drift None: every point's mean also moved by the
    scatter the model leaves) and as measured on a quiet host (no point flagged): the form's lead share
    from resamples of the repetitions alone is higher (0.5 % between runs; the models leave ~4 %, which
    a sweep measured again has too), and the intervals' resamples are the same as the unknown host's
    (the same draws moved by the same scatter), so the intervals still carry what the forms miss."""
    rng = np.random.default_rng(5)
    x, y = between_forms_sweep(rng)
    unknown, = fit_models(x, [y], ["n", "m"], options=FitOptions(bootstrap=40, seed=3))
    quiet, = fit_models(x, [y], ["n", "m"], options=FitOptions(bootstrap=40, seed=3, drift=(False,) * len(x)))
    print(f"lead shares: unknown host {unknown.lead_share:.2f}, quiet {quiet.lead_share:.2f}; scatter {unknown.scatter:.3f}")
    assert unknown.scatter > 0.02  # the form's scatter, far above the runs' 0.5 %
    assert quiet.lead_share > unknown.lead_share and quiet.lead_share >= 0.8, (quiet.lead_share, unknown.lead_share)
    at = np.array([[4000.0, 3.0], [1200.0, 8.0]])
    assert np.allclose([b.predict(at) for b in quiet.bootstrap], [b.predict(at) for b in unknown.bootstrap])
    low, high = quiet.interval(at)
    assert np.all(high / low > np.exp(2 * 1.645 * 0.02))  # at least the form's scatter wide


def test_a_quiet_hosts_interval_takes_the_largest_of_its_terms_in_place_of_their_sum():
    """Where every point is known quiet the model says so (Model.quiet), and its interval's log
    half-width is z times the largest of the resamples' spread, the scatter and the extrapolation error
    (each an estimate of the form's misfit there), not z times their root sum of squares, which a model
    with a point the host may have moved keeps."""
    from dataclasses import replace
    x, y = between_forms_sweep(np.random.default_rng(5))
    fits = [fit_models(x, [y], ["n", "m"], options=FitOptions(bootstrap=40, seed=3, drift=drift))[0]
            for drift in ((False,) * len(x), (True,) + (False,) * (len(x) - 1), None)]
    quiet = fits[0]
    assert [m.quiet for m in fits] == [True, False, False]
    assert Model.from_dict(quiet.to_dict()).quiet and not Model.from_dict(fits[1].to_dict()).quiet
    at = np.array([[4000.0, 3.0], [1200.0, 8.0], [1200.0, 3.0]])  # beyond the grid in n, in m; inside it
    logs = np.log([b.predict(at) for b in quiet.bootstrap])
    spread = np.sqrt(np.sum((logs - logs.mean(axis=0)) ** 2, axis=0) / (len(logs) - 1))
    beyond = quiet.beyond(at)
    assert beyond[0] > 0 and beyond[1] > 0 and beyond[2] == 0
    terms = np.array([spread, np.full(len(at), quiet.scatter), beyond])
    z = 1.6448536269514722
    low, high = quiet.interval(at)
    np.testing.assert_allclose(np.log(high / low) / 2, z * terms.max(axis=0), rtol=1e-9)
    low, high = replace(quiet, quiet=False).interval(at)
    np.testing.assert_allclose(np.log(high / low) / 2, z * np.sqrt(np.sum(terms ** 2, axis=0)), rtol=1e-9)


def test_the_disturbed_points_alone_move_with_the_host():
    """resampled_means with a flag per point: the flagged points' means stray by the excess, the others
    are the repetitions' resamples alone (the same draws as without an excess)."""
    from perfsweep.modeling.fit_resample import resampled_means
    y = np.array([[1.0, 1.02, 0.98], [2.0, 2.04, 1.96], [3.0, 3.06, 2.94]])
    plain = resampled_means(y, 200, np.random.default_rng(1))
    moved = resampled_means(y, 200, np.random.default_rng(1), excess=0.2, drift=(False, True, False))
    assert np.array_equal(moved[:, [0, 2]], plain[:, [0, 2]])
    assert np.std(np.log(moved[:, 1] / plain[:, 1])) == pytest.approx(0.2, rel=0.2)


def test_which_points_the_host_may_have_moved():
    import pandas as pd
    from perfsweep.modeling.pipeline import drift_points
    sel = pd.DataFrame({"others_busy_share": [0.05, 0.3, np.nan, 0.2],
                        "disturbed_ok_share": [0.0, 1.0, 0.0, 0.5]})
    # quiet; disturbed (its median from disturbed runs); host unknown; half disturbed: its median is not
    assert drift_points(sel) == (False, True, True, False)
    assert drift_points(sel.iloc[[1, 2]]) is None  # none known quiet: every point, as before
    assert drift_points(sel.drop(columns="others_busy_share")) is None  # an aggregate without host load


def test_the_prediction_and_interval_average_over_the_resamples_forms():
    """Where half the resamples chose another form than the reported one (its predictions 20 % above
    the reported one's beyond the grid), the prediction is their geometric mean, whatever form the
    formula is, and the interval around it reaches both; without resamples, the formula's prediction."""
    line = Model(["n"], [Term((Factor(0, 1, 0),))], np.array([0.0, 1.0]), scatter=0.0)
    other = Model(["n"], [Term((Factor(0, 1, 0),))], np.array([0.0, 1.2]))
    line.bootstrap = [line, other] * 5
    assert line.expected([100.0])[0] == pytest.approx(100 * np.sqrt(1.2))
    low, high = line.interval([100.0])
    assert low[0] < 100 < 120 < high[0]
    other.bootstrap = [line] * 10  # every resample chose the other form: so does the prediction
    assert other.expected([100.0])[0] == pytest.approx(100.0) and other.predict([100.0])[0] == pytest.approx(120.0)
    assert Model(["n"], line.terms, line.coefficients).expected([100.0])[0] == 100.0
