"""compare's ratio statistic (perfsweep.compare.statistics.ratio) where its inputs fall short: a paired
comparison without pairs of runs, resamples that are not all positive, models without resamples, and a
prediction that is not positive. Synthetic pairs: each case is a branch that real sweeps reach rarely."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from perfsweep.compare.load import Entry
from perfsweep.compare.statistics import Pair, ratio
from perfsweep.modeling.model import Model
from perfsweep.modeling.terms import Factor, Term

N = Term((Factor(0, Fraction(1), 0),))


def entry(c0: float, c1: float, resamples: int = 5) -> Entry:
    model = Model(["n"], [N], np.array([c0, c1]))
    model.bootstrap = [Model(["n"], [N], np.array([c0, c1 * (1 + 0.01 * k)])) for k in range(resamples)]
    points = np.array([[100.0], [200.0], [300.0]])
    return Entry(model, points, model.predict(points), "models.json")


def pair(a: Entry, b: Entry, ra=None, rb=None, paired=False) -> Pair:
    x = np.array([400.0])
    pa, pb = float(a.model.predict(x[None])[0]), float(b.model.predict(x[None])[0])
    ra = np.array([float(m.predict(x[None])[0]) for m in a.model.bootstrap]) if ra is None else np.asarray(ra)
    rb = np.array([float(m.predict(x[None])[0]) for m in b.model.bootstrap]) if rb is None else np.asarray(rb)
    return Pair("s", "all", "time", a, b, ["n"], [0], x, pa, pb, ra, rb, math.nan, math.nan, 0.9, 0.05, paired)


def test_a_paired_comparison_without_pairs_of_runs_is_judged_as_two_sweeps():
    got = ratio(pair(entry(0.0, 1.0), entry(0.0, 1.2), paired=True))
    assert got["notes"] == ["paired, but the aggregates hold no pairs of runs (no repetitions): judged as two sweeps"]
    assert got["ratio"] == 1.2 * 400 / 400 and got["low"] < 1.2 < got["high"] and math.isfinite(got["se"])


def test_a_resample_not_positive_takes_the_delta_method():
    a, b = entry(0.0, 1.0), entry(0.0, 1.2)
    ra = np.array([400.0, 410.0, -5.0, 395.0])  # a resampled model below zero at the target
    got = ratio(pair(a, b, ra=ra))
    rb = pair(a, b).resampled_b
    want = math.hypot(float(np.std(ra, ddof=1)) / 400.0, float(np.std(rb, ddof=1)) / 480.0)
    assert got["se"] == want and got["low"] < got["ratio"] < got["high"]


def test_models_without_resamples_get_no_interval_and_say_which_side():
    both = ratio(pair(entry(0.0, 1.0, resamples=0), entry(0.0, 1.2, resamples=0)))
    assert both["notes"] == ["no resamples on both sides: no interval (fitted without repetitions)"]
    assert math.isnan(both["se"]) and math.isnan(both["low"]) and math.isnan(both["high"])
    one = ratio(pair(entry(0.0, 1.0), entry(0.0, 1.2, resamples=0)))
    assert one["notes"] == ["no resamples on side B: no interval (fitted without repetitions)"]
    a_only = ratio(pair(entry(0.0, 1.0, resamples=0), entry(0.0, 1.2)))
    assert a_only["notes"] == ["no resamples on side A: no interval (fitted without repetitions)"]


def test_a_prediction_not_positive_has_no_ratio_test():
    got = ratio(pair(entry(0.0, 1.0), entry(-1000.0, 1.2)))  # B: 480 - 1000 < 0 at n = 400
    assert got["notes"] == ["prediction not positive at the target (A 400, B -520): no ratio test"]
    assert got["ratio"] < 0 and math.isnan(got["se"]) and math.isnan(got["low"])
