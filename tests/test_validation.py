"""Validation points (perfsweep.modeling.validation): models evaluated at measured points they never
saw; the pipeline fits the grid rows only."""

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from perfsweep.modeling import Factor, Model, Term, validation
from perfsweep.modeling.pipeline import fit_study_models


def linear(a, b):
    """a + b * n, a model of one parameter n."""
    return Model(["n"], [Term((Factor(0, Fraction(1), 0),))], np.array([a, b], dtype=float))


def with_resamples(model, slopes):
    model.bootstrap = [linear(model.coefficients[0], s) for s in slopes]
    return model


POINTS = pd.DataFrame({"config_id": ["n=100", "n=200", "n=400"], "n": [100.0, 200.0, 400.0],
                       "median": [2.0, 4.8, 6.0]})


def test_evaluate_predicts_compares_and_covers():
    model = with_resamples(linear(0.0, 0.02), [0.018, 0.019, 0.021, 0.022])  # 2 at n = 100, 4 at 200, 8 at 400
    at = validation.evaluate(model, POINTS, ["n"], 0.9)
    # the prediction averaged over the resamples' forms: the geometric mean of their slopes, 0.01994
    slope = np.exp(np.mean(np.log([0.018, 0.019, 0.021, 0.022])))
    pred = slope * np.array([100.0, 200.0, 400.0])
    np.testing.assert_allclose(at["predicted"], pred)
    np.testing.assert_allclose(at["rel_error"], (pred - [2.0, 4.8, 6.0]) / [2.0, 4.8, 6.0])
    np.testing.assert_allclose(at["residual"], [2.0, 4.8, 6.0] - pred)
    low, high = model.interval(POINTS[["n"]].to_numpy(float), 0.9)
    np.testing.assert_allclose(at["low"], low)
    np.testing.assert_allclose(at["high"], high)
    # the resamples' slopes spread the prediction by 9 % (log-normal), +-15 % at 90 %: 2.0 inside, 4.8 and 6 outside
    assert list(at["covered"]) == [True, False, False]
    s = validation.summary(at)
    assert s["validation_points"] == 3
    assert s["validation_median_error"] == pytest.approx((4.8 - pred[1]) / 4.8)
    assert s["validation_coverage"] == pytest.approx(1 / 3)
    assert s["validation_width"] == pytest.approx(np.median((high - low) / pred))
    assert 0.2 < s["validation_width"] < 0.4  # +-15 %: about 30 % of the value


def test_without_resamples_there_is_no_interval_and_nothing_is_covered():
    at = validation.evaluate(linear(0.0, 0.02), POINTS, ["n"], 0.9)
    assert not at["covered"].any() and at["low"].isna().all()
    s = validation.summary(at)
    assert s["validation_points"] == 3 and np.isnan(s["validation_coverage"]) and np.isnan(s["validation_width"])
    entries = validation.entries(at, ["n"])
    assert entries[0] == {"parameters": {"n": 100.0}, "measured": 2.0, "predicted": 2.0, "low": None, "high": None,
                          "covered": False}
    json.dumps(entries, allow_nan=False)  # strict JSON, as models.json is written
    line = validation.describe(entries, "time", 0.9, " s")[1]
    assert line == "validation n = 200: time measured 4.8 s, predicted 4 s (no interval): not covered, error -16.7 %"


def test_no_points_and_points_without_a_measurement():
    empty = validation.evaluate(linear(1.0, 1.0), POINTS.iloc[0:0], ["n"], 0.9)
    assert len(empty) == 0 and validation.entries(empty, ["n"]) == []
    s = validation.summary(empty)
    assert s["validation_points"] == 0 and np.isnan(s["validation_median_error"])
    failed = POINTS.assign(median=[2.0, np.nan, 6.0])  # every run of n = 200 failed
    assert list(validation.evaluate(linear(0.0, 0.02), failed, ["n"], 0.9)["n"]) == [100.0, 400.0]


def test_describe_gives_the_interval_and_whether_it_covered():
    point = {"parameters": {"n": 4000.0, "m": 3.0}, "measured": 3.21, "predicted": 3.05, "low": 2.81, "high": 3.3,
             "covered": True}
    assert validation.describe([point], "time", 0.9, " s") == [
        "validation n = 4000, m = 3: time measured 3.21 s, predicted 3.05 s [2.81, 3.3] (90 %): covered, error -5.0 %"]


def test_split_reads_the_column_as_written_to_csv(tmp_path):
    agg = POINTS.assign(validation=[False, False, True])
    agg.to_csv(tmp_path / "a.csv", index=False)
    for frame in (agg, pd.read_csv(tmp_path / "a.csv"), agg.assign(validation=["False", "False", "True"])):
        fitted, checks = validation.split(frame)
        assert list(fitted["n"]) == [100.0, 200.0] and list(checks["n"]) == [400.0]
    fitted, checks = validation.split(POINTS)  # an aggregate from before validation points
    assert len(fitted) == 3 and len(checks) == 0


def test_the_pipeline_never_fits_validation_points():
    """The same aggregate with and without two validation rows far off the truth: the models are the
    same (fitted on the grid only); the validation rows are evaluated and reported."""
    rng = np.random.default_rng(3)
    n = np.array([100, 200, 300, 400, 500.0])
    grid = pd.DataFrame({"config_id": [f"n={v:g}" for v in n], "n": n})
    reps = (1 + 0.01 * grid["n"].to_numpy())[:, None] * (1 + rng.uniform(-0.02, 0.02, (5, 3)))
    grid = grid.assign(region="all", metric="time", median=np.median(reps, axis=1),
                       values=[" ".join(repr(float(v)) for v in r) for r in reps], validation=False)
    # at n = 1500 the truth is 16; measured 32 (twice it) and at n = 1000 11 (its value)
    checks = pd.DataFrame({"config_id": ["n=1000", "n=1500"], "n": [1000.0, 1500.0], "region": "all",
                           "metric": "time", "median": [11.0, 32.0], "values": ["11.0", "32.0"], "validation": True})
    table, models, preds = fit_study_models(pd.concat([grid, checks], ignore_index=True), "s", ["n"], {}, bootstrap=20)
    alone, alone_models, _ = fit_study_models(grid.drop(columns=["validation"]), "s", ["n"], {}, bootstrap=20)
    assert table["model"].iloc[0] == alone["model"].iloc[0] and table["n_points"].iloc[0] == 5
    assert models[0]["model"] == alone_models[0]["model"]
    row = table.iloc[0]
    assert row["validation_points"] == 2
    pred = preds[preds["validation"]].set_index("config_id")
    assert list(pred.index) == ["n=1000", "n=1500"] and len(preds[~preds["validation"]]) == 5
    assert pred.loc["n=1000", "rel_error"] == pytest.approx((pred.loc["n=1000", "predicted"] - 11) / 11)
    assert abs(pred.loc["n=1000", "rel_error"]) < 0.05 and pred.loc["n=1500", "rel_error"] == pytest.approx(-0.5, abs=0.03)
    assert not pred.loc["n=1500", "covered"]
    assert row["validation_median_error"] == pytest.approx(np.median(np.abs(pred["rel_error"])))
    assert row["validation_coverage"] == pytest.approx(pred["covered"].mean())
    listed = models[0]["validation"]
    assert [p["parameters"] for p in listed] == [{"n": 1000.0}, {"n": 1500.0}]
    assert listed[1]["measured"] == 32.0 and listed[1]["covered"] is False
    assert "validation_points" in alone.columns and alone["validation_points"].iloc[0] == 0
