"""Models that hold when the sweep is measured again: the reported form over replicate sweeps, the
intervals beyond the grid, negative constants, rates, and the process count's regimes.

The synthetic sweeps carry the noise measured on the 2-core test machines rather than Gaussian noise:
heavy-tailed run-to-run noise (Student's t with 3 degrees of freedom, 4 % scale) and a drift of the
host between configurations (a random walk through the order of measurement plus a per-configuration
offset, 3 %) that the repetitions of one configuration do not see.
"""

import itertools

import numpy as np
import pandas as pd
import pytest

from perfsweep.modeling import Model
from perfsweep.modeling.lead_orders import lead_orders, same_lead_order
from perfsweep.modeling.pipeline import fit_study_models


def ljmd_like(n, m):
    """ljmd's work law (apps/ljmd.py): per molecule pair alpha + beta m^2 site pairs within a reach that
    grows with the sites' circumradius, plus the integration of every molecule."""
    r = np.where(m > 1, 1.0 / (2 * np.sin(np.pi / np.maximum(m, 2))), 0.0)
    return 0.03 + 4e-6 * n * (1 + m ** 2) * ((2.3 + 2 * r) / 2.3) ** 3 + 2e-5 * n


def sweep(rng, f, values, reps=2, run=0.04, drift=0.03, validate=None, validate_reps=3):
    """Points of the full grid and their repetitions (N x reps), measured in a random order; with
    ``validate`` (V x q) also the medians of ``validate_reps`` runs at those points, measured in the
    same sweep (at random places in its order, under the same drift)."""
    pts = np.array(list(itertools.product(*values)), float)
    extra = np.empty((0, pts.shape[1])) if validate is None else np.asarray(validate, float)
    count = len(pts) + len(extra)
    level = np.empty(count)
    level[rng.permutation(count)] = np.exp(np.cumsum(rng.normal(0, drift / 2, count)) + rng.normal(0, drift, count))
    y = (f(*pts.T) * level[:len(pts)])[:, None] * np.exp(run * rng.standard_t(3, (len(pts), reps)))
    if validate is None:
        return pts, y
    runs = np.exp(run * rng.standard_t(3, (len(extra), validate_reps)))
    return pts, y, f(*extra.T) * level[len(pts):] * np.median(runs, axis=1)


def aggregate(pts, y, names, metric="time", oversubscribed=None):
    rows = [{**dict(zip(names, x)), "config_id": "_".join(f"{k}={v:g}" for k, v in zip(names, x)), "region": "all",
             "metric": metric, "median": float(np.median(v)), "values": " ".join(map(str, v))}
            for x, v in zip(pts, y)]
    agg = pd.DataFrame(rows)
    if oversubscribed is not None:
        agg["oversubscribed"] = oversubscribed
    return agg


def main_model(agg, names, **kw):
    table, models, preds = fit_study_models(agg, "s", names, {}, **kw)
    return Model.from_dict(models[0]["model"]), table.iloc[0], preds


def test_replicate_sweeps_agree_in_predictions_and_say_the_form_is_undecided():
    """Twelve triples of replicate sweeps of T(n, m). This law is no PMNF form (site pairs within a
    reach that grows with m: its effective power of m lies between m^2 and m^(8/3) over m = 1-5), so the
    sweeps' noise moves the reported forms among neighbours: n m^(5/2), n^(3/4) log2(n)^2 m^(7/3), ...
    By the strict lead-order rule (issue 44: the same lead terms) the three models of a triple agree in
    at most 2 of 12 (0 when this test was written; 8 by the rule before, which forgave 1/4 of a power),
    and the lead shares say so: their median is below 0.8 (0.45), the forms are not called decided.
    What must hold is agreement judged by predictions: at 2-3x the largest n the three sweeps'
    predictions lie apart (largest over smallest) by a median of at most 20 % (14 %) and never by
    more than 35 % (28 %; the reported models are chosen as before the rule, their predictions the same)."""
    values = [[400, 800, 1200, 1600, 2000], [1, 2, 3, 4, 5]]
    at = np.array([[4000.0, 3.0], [6000.0, 3.0], [4000.0, 5.0]])
    rng = np.random.default_rng(3)
    triples = []
    for _ in range(12):
        sweeps = [aggregate(*sweep(rng, ljmd_like, values), ["n", "m"]) for _ in range(3)]
        triples.append([main_model(agg, ["n", "m"], bootstrap=40)[0] for agg in sweeps])
    agree = sum(all(same_lead_order(a, b) for a in t for b in t if a is not b) for t in triples)
    shares = np.array([m.lead_share for t in triples for m in t])
    preds = np.array([[m.predict(at) for m in t] for t in triples])  # triples x sweeps x points
    apart = preds.max(axis=1) / preds.min(axis=1) - 1
    print(f"agree {agree} of 12; lead shares median {np.median(shares):.2f}; predictions apart median "
          f"{np.median(apart):.1%}, max {apart.max():.1%}")
    assert agree <= 2, agree
    assert np.median(shares) < 0.8, shares
    assert np.median(apart) <= 0.20 and apart.max() <= 0.35, apart


def test_intervals_cover_new_measurements_beyond_the_grid():
    """90 % intervals of the reported models at n = 4000 and 6000 (2-3x the largest n), against the
    medians of 3 runs measured there in the same sweep (under its drift): about 90 % covered, and the
    models err there by at most 15 % (median)."""
    rng = np.random.default_rng(11)
    values = [[400, 800, 1200, 1600, 2000], [1, 2, 3, 4, 5]]
    at = np.array([[4000.0, 3.0], [6000.0, 3.0], [4000.0, 5.0]])
    covered, errors = [], []
    for _ in range(30):
        pts, y, measured = sweep(rng, ljmd_like, values, validate=at)
        model = main_model(aggregate(pts, y, ["n", "m"]), ["n", "m"])[0]
        low, high = model.interval(at, 0.9)
        covered += list((low <= measured) & (measured <= high))
        errors += list(np.abs(model.predict(at) - measured) / measured)
    print(f"coverage {np.mean(covered):.2f}, median error {np.median(errors):.3f}")
    assert 0.8 <= np.mean(covered) <= 0.97, np.mean(covered)
    assert np.median(errors) <= 0.15, np.median(errors)


def test_no_negative_constant_beyond_the_noise():
    """Data that a log2 term with a constant of -2.4 fits exactly (0.2 + 0.3 log2(n / 400), rising from
    0.2 to 0.9 s): the reported time model's constant is not below -5 % of the smallest mean, or the
    table flags it."""
    rng = np.random.default_rng(0)
    pts = np.array(list(itertools.product([400, 800, 1600, 3200, 6400], [1, 2, 3, 4, 5])), float)
    truth = 0.2 + 0.3 * np.log2(pts[:, 0] / 400) + 0.02 * pts[:, 1]
    y = truth[:, None] * (1 + rng.normal(0, 0.02, (len(pts), 3)))
    model, row, _ = main_model(aggregate(pts, y, ["n", "m"]), ["n", "m"])
    smallest = float(np.min(y.mean(axis=1)))
    assert model.coefficients[0] >= -0.05 * smallest or "negative constant" in row["notes"], (str(model), row["notes"])
    assert model.coefficients[0] >= -0.05 * smallest, str(model)  # here an admissible form exists


def test_rate_is_modelled_through_its_reciprocal():
    """A LAMMPS-style throughput (timesteps/s) whose steps/s fall like 1/s^3 (the box scale s: atoms grow
    like s^3), over s = 8-16 and p = 1-3: the model is 1 / (PMNF), its adjusted R^2 above 0 (above the
    constant), and beyond the grid (s = 20, 24) it errs by at most 15 %."""
    rng = np.random.default_rng(1)

    def rate(s, p):
        return 1.0 / (1e-3 + 2.4e-6 * s ** 3 / p + 3e-4 * np.log2(p + 1))

    values = [[8, 10, 12, 14, 16], [1, 2, 3]]
    pts, y = sweep(rng, rate, values, reps=3, run=0.03, drift=0.02)
    model, row, _ = main_model(aggregate(pts, y, ["s", "p"], metric="timesteps/s"), ["s", "p"], processes="p")
    assert model.reciprocal and str(model).startswith("1 / (")
    assert model.adj_r2 > 0, model.adj_r2
    at = np.array([[20.0, 1.0], [24.0, 1.0], [24.0, 3.0]])
    err = np.abs(model.predict(at) - rate(*at.T)) / rate(*at.T)
    assert np.all(err <= 0.15), (str(model), err)
    assert lead_orders(model)["s"] < (0, 0)  # it falls in s


@pytest.mark.parametrize("declared", [True, False])
def test_a_rate_with_oversubscribed_process_counts_gets_a_model(declared):
    """The issue-44 case: a LAMMPS-style timesteps/s (named timesteps_per_s) over s = 8-16 and p = 1-3 on
    2 cores, p = 3 oversubscribed (not fitted, 5x slower): its medians fall about 8x over s, and it got a
    constant (adj. R^2 -0.64) while the name guess called it a time and the rate's growth with p gave
    its reciprocal the form log2(p). Declared (the aggregate's unit steps/s and better higher, as the
    config's pattern declares them) or, in an aggregate written before the declaration, guessed from the
    name: a reciprocal model whose reciprocal falls with p (Amdahl's p^-1), within 15 % at s = 24."""
    rng = np.random.default_rng(5)

    def rate(s, p):
        slow = np.where(p > 2, 5.0, 1.0)
        return 1.0 / ((2e-4 + 2.4e-6 * s ** 3 * (0.2 + 0.8 / np.minimum(p, 2))) * slow)

    values = [[8, 10, 12, 14, 16], [1, 2, 3]]
    pts, y = sweep(rng, rate, values, reps=3, run=0.03, drift=0.02)
    agg = aggregate(pts, y, ["s", "p"], metric="timesteps_per_s", oversubscribed=pts[:, 1] > 2)
    if declared:
        agg["unit"], agg["better"] = "steps/s", "higher"
    table, models, _ = fit_study_models(agg, "s", ["s", "p"], {}, processes="p")
    model, row = Model.from_dict(models[0]["model"]), table.iloc[0]
    assert (models[0]["unit"], models[0]["better"]) == ("steps/s" if declared else "1/s", "higher")
    assert (row["unit"], row["better"]) == (models[0]["unit"], "higher")
    assert model.reciprocal and model.adj_r2 > 0.5, (str(model), model.adj_r2)
    assert "assumed p^-1" in row["notes"] and "worse than the mean" not in row["notes"], row["notes"]
    at = np.array([[24.0, 1.0], [24.0, 2.0]])
    err = np.abs(model.predict(at) - rate(*at.T)) / rate(*at.T)
    assert np.all(err <= 0.15), (str(model), err)


def test_time_is_not_modelled_through_its_reciprocal():
    rng = np.random.default_rng(2)
    pts, y = sweep(rng, lambda n, m: 0.1 + 1e-4 * n * m, [[100, 200, 300, 400, 500], [1, 2, 3, 4, 5]])
    model, _, _ = main_model(aggregate(pts, y, ["n", "m"], metric="time"), ["n", "m"])
    assert not model.reciprocal


def test_oversubscribed_process_counts_are_reported_beside_the_model():
    """Strong scaling on 2 cores with p = 1-4: p = 3 and 4 (oversubscribed, as the records say) are not
    fitted; with two process counts left the form in p is Amdahl's law, a serial part beside the part
    divided among the ranks; the table says what oversubscription did (measured / model)."""
    rng = np.random.default_rng(4)

    def strong(n, p):
        cores = 2.0
        return (0.02 + 1.5e-4 * n + 7e-4 * n / np.minimum(p, cores)) * np.where(p > cores, 1 + 0.3 * (p - cores), 1.0)

    pts, y = sweep(rng, strong, [[600, 900, 1200, 1500, 1800], [1, 2, 3, 4]], run=0.02, drift=0.01)
    model, row, preds = main_model(aggregate(pts, y, ["n", "p"], oversubscribed=pts[:, 1] > 2), ["n", "p"],
                                   processes="p")
    assert sorted(np.unique(model.points[:, 1])) == [1.0, 2.0]
    assert "oversubscribed" in row["notes"] and "assumed p^-1" in row["notes"]
    with_p = [t for t in model.terms if any(model.param_names[f.param] == "p" for f in t.factors)]
    assert with_p and len(with_p) < len(model.terms), str(model)  # a parallel and a serial part
    slow = dict(part.split(": ") for part in row["oversubscribed"].split(", "))
    assert set(slow) == {"p = 3", "p = 4"} and float(slow["p = 4"].rstrip("x")) > 1.3, row["oversubscribed"]
    over = preds[preds["oversubscribed"]]
    assert len(over) == 10 and set(over["p"]) == {3, 4}
    at = np.array([[3600.0, 1.0], [3600.0, 2.0]])
    assert np.all(np.abs(model.predict(at) / strong(*at.T) - 1) <= 0.15), str(model)


def test_with_two_process_counts_a_cost_that_grows_in_p_is_not_given_amdahls_form():
    """Communication grows from p = 1 to 2 (nothing to exchange alone): with two process counts its
    form in p is assumed log2(p), not Amdahl's p^-1 (which can grow only with a negative parallel part
    and, fitted so, predicted worse than the mean), and the time beside it keeps p^-1; each row says
    which form was assumed."""
    rng = np.random.default_rng(6)
    values = [[600, 900, 1200, 1500, 1800], [1, 2]]
    pts, t = sweep(rng, lambda n, p: 0.02 + 1.5e-4 * n + 7e-4 * n / p, values)
    _, comm = sweep(rng, lambda n, p: 1e-4 + 2e-6 * n * np.log2(p) + 1e-5, values)
    agg = pd.concat([aggregate(pts, t, ["n", "p"]), aggregate(pts, comm, ["n", "p"], metric="comm")])
    table, models, _ = fit_study_models(agg, "s", ["n", "p"], {}, processes="p")
    rows = table.set_index("metric")
    assert "assumed p^-1" in rows.loc["time", "notes"] and "assumed log2(p)" in rows.loc["comm", "notes"]
    comm_model = Model.from_dict(next(m for m in models if m["metric"] == "comm")["model"])
    assert comm_model.adj_r2 > 0.5 and lead_orders(comm_model)["p"] == (0, 1), str(comm_model)
    assert "worse than the mean" not in rows.loc["comm", "notes"]


@pytest.mark.parametrize("metric", ["time", "GFLOP/s"])
def test_no_model_below_the_constant_without_a_flag(metric):
    """Pure noise around a constant: no parameter explains anything. Whatever is reported, its adjusted
    R^2 is not below 0 unless the table says so."""
    rng = np.random.default_rng(7)
    pts, y = sweep(rng, lambda n, m: np.full(len(n), 1.0), [[100, 200, 300, 400, 500], [1, 2, 3, 4, 5]])
    model, row, _ = main_model(aggregate(pts, y, ["n", "m"], metric=metric), ["n", "m"])
    assert model.adj_r2 >= 0 or "worse than the mean" in row["notes"], (str(model), model.adj_r2, row["notes"])


def test_a_metric_the_first_round_misses_badly_is_still_resampled():
    """A rank phase of microseconds that is all noise (log-normal, sd 1.5) with one outlier
    configuration, beside a real trend: the first round's model leaves a scatter of thousands of percent,
    and resamples moved by that much drew means of 0 and inf (SVD did not converge: the models stage of
    the default config's RMSD study failed so in a fresh make run). The scatter carried into the
    resamples is at most the means' own spread; both sets get models with resamples and intervals."""
    from perfsweep.modeling import FitOptions, fit_models

    x = np.array([(f, p) for f in [800, 1200, 1600, 2000, 2400.0] for p in [1, 2, 3.0]])
    for seed in range(5):
        rng = np.random.default_rng(seed)
        tiny = 4e-5 * np.exp(rng.normal(0, 1.5, (len(x), 2)))
        tiny[rng.integers(len(x))] *= 300
        trend = (0.05 + 6e-5 * x[:, 0] / x[:, 1])[:, None] * np.exp(rng.normal(0, 0.05, (len(x), 2)))
        models = fit_models(x, [trend, tiny], ["frames", "p"], options=FitOptions(bootstrap=40, negative_params=("p",)))
        for model in models:
            low, high = model.interval([[4800.0, 2.0]], 0.9)
            assert model.bootstrap and np.isfinite(low).all() and np.isfinite(high).all() and low[0] < high[0]


def test_simplest_within_one_penalty_gives_the_laws_growth_in_n():
    """The config's ``modeling: {simplest_within: 1}``: every data set takes the simplest form within one
    coefficient's penalty of its best. ljmd_like is linear in n. Of ten sweeps fitted by default, 4 had
    n (others n^(3/4) log2(n)^2, n^(2/3) log2(n)^2, n log2(n): alike over n = 400-2000); with the option
    all ten (their forms in m still differ: the law's m is no PMNF form), and at 2-3x the largest n
    they erred by a median of 5 % instead of 10 %."""
    values = [[400, 800, 1200, 1600, 2000], [1, 2, 3, 4, 5]]
    at = np.array([[4000.0, 3.0], [6000.0, 3.0], [4000.0, 5.0]])
    rng = np.random.default_rng(3)
    linear, errors = {0: 0, 1: 0}, {0: [], 1: []}
    for _ in range(10):
        agg = aggregate(*sweep(rng, ljmd_like, values), ["n", "m"])
        for k in (0, 1):
            model = main_model(agg, ["n", "m"], bootstrap=40, modeling={"simplest_within": k})[0]
            linear[k] += lead_orders(model)["n"] == (1, 0)
            errors[k] += list(np.abs(model.predict(at) / ljmd_like(*at.T) - 1))
    print(f"n linear: {linear}; median error at 2-3x n: {np.median(errors[0]):.3f} (0), {np.median(errors[1]):.3f} (1)")
    assert linear[1] == 10 and linear[0] < 10, linear
    assert np.median(errors[1]) < np.median(errors[0]), errors
