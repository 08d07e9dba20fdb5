import json
import re
import subprocess
import sys

import numpy as np
import pytest

from perfsweep.errors import PredictError
from perfsweep.modeling import FitOptions, Model, fit_model
from perfsweep.modeling.predict import load_model, predict, recommend


@pytest.fixture
def models_json(tmp_path):
    n = np.array([1000, 2000, 3000, 4000, 5000.0])
    p = np.array([1, 2, 4, 8, 16.0])
    x = np.array([(a, b) for a in n for b in p])
    y = 0.5 + 2e-3 * x[:, 0] / x[:, 1]  # a serial part and a part that scales
    model = fit_model(x, y, ["n", "p"], options=FitOptions(negative_params=("p",)))
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "time", "fixed": {},
                                 "model": model.to_dict()}]))
    return path


def test_predict_grid(models_json):
    model = load_model(models_json)
    out = predict(model, {"n": [1000, 8000], "p": 4})
    assert list(out.columns) == ["n", "p", "predicted"] and len(out) == 2
    assert out["predicted"].iloc[1] == pytest.approx(0.5 + 2e-3 * 8000 / 4, rel=1e-6)


def test_recommend_time_and_core_hours_under_constraints(models_json):
    model = load_model(models_json)
    grid = {"n": [4000], "p": list(range(1, 65))}
    assert recommend(model, grid, "time")["p"].iloc[0] == 64
    assert recommend(model, grid, "time", constraints=["p<=8"])["p"].iloc[0] == 8
    assert recommend(model, grid, "core_hours")["p"].iloc[0] == 1  # core-hours 0.5 p + 8 grow with p
    efficient = recommend(model, grid, "time", min_efficiency=0.55)
    # E(p) = t(1) / (p t(p)) = 8.5 / (0.5 p + 8) >= 0.55 up to p = 14.9
    assert efficient["efficiency"].min() >= 0.55 and efficient["p"].iloc[0] == 14


def test_errors(models_json):
    model = load_model(models_json)
    with pytest.raises(PredictError, match="unknown parameter"):
        predict(model, {"n": 1, "p": 1, "q": 2})
    with pytest.raises(PredictError, match="give a value for p"):
        predict(model, {"n": 1})
    with pytest.raises(PredictError, match="no model for region 'x'"):
        load_model(models_json, region="x")
    with pytest.raises(PredictError, match="not of the form"):
        recommend(model, {"n": [1], "p": [1]}, constraints=["p lots"])


def test_a_damaged_resample_is_named_by_its_field(tmp_path, noisy_models_json):
    """The checks of a loaded model pass sound models at once and name the field of a damaged one: a
    resample's term, a resample's coefficients, an alternative's term."""
    entries = json.loads(noisy_models_json.read_text())
    assert entries[0]["model"]["bootstrap"]
    for damage, field in [(lambda m: m["bootstrap"][3]["terms"][0][0].__setitem__(0, 7),
                           "model.bootstrap[3].terms[0][0]: parameter index 7 is out of range"),
                          (lambda m: m["bootstrap"][1]["coefficients"].append(1.0), "model.bootstrap[1].coefficients: "),
                          (lambda m: m.__setitem__("alternatives", [{"terms": [[[0, "1", -1]]], "coefficients": [1, 2],
                                                                     "criterion": 0.0}]),
                           "model.alternatives[0].terms[0][0]: log exponent -1 is negative")]:
        copy = json.loads(json.dumps(entries))
        damage(copy[0]["model"])
        path = tmp_path / "damaged.json"
        path.write_text(json.dumps(copy))
        with pytest.raises(PredictError, match=re.escape(field)):
            load_model(path, copy[0]["region"], copy[0]["metric"])


def test_cli(models_json):
    out = subprocess.run([sys.executable, "-m", "perfsweep.cli", "recommend", str(models_json), "n=4000",
                          "p=1,2,4,8,16,32", "--constraint", "p<=16"], capture_output=True, text=True, check=True)
    assert "best by time" in out.stdout and out.stdout.splitlines()[5].split()[1] == "16.0"
    bad = subprocess.run([sys.executable, "-m", "perfsweep.cli", "predict", str(models_json), "n=oops", "p=1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip() == "perfsweep: 'n=oops': values must be numbers"


@pytest.fixture
def noisy_models_json(tmp_path):
    """A model fitted by the pipeline's path: repetitions, resamples, the process parameter stored."""
    rng = np.random.default_rng(3)
    x = np.array([(a, b) for a in [1000, 2000, 3000, 4000, 5000.0] for b in [1, 2, 4, 8, 16.0]])
    y = (0.5 + 2e-3 * x[:, 0] / x[:, 1])[:, None] * (1 + rng.uniform(-0.05, 0.05, (len(x), 5)))
    model = fit_model(x, y, ["n", "q"], options=FitOptions(negative_params=("q",), bootstrap=40))
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "time", "fixed": {}, "processes": "q",
                                 "notes": ["form in q assumed"], "model": model.to_dict()}]))
    return path


def test_predict_prints_intervals_and_form(noisy_models_json):
    out = subprocess.run([sys.executable, "-m", "perfsweep.cli", "predict", str(noisy_models_json), "n=8000",
                          "q=4,32"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert re.fullmatch(r"# lead order agreed by \d+% of 40 resamples: .*q\^\(-1\).*(; runner-up .* in \d+%)?",
                        out[1]), out[1]
    assert out[2] == "# note: form in q assumed"  # the models table's notes travel with the model
    line = re.fullmatch(r"n = 8000, q = 4: t = ([0-9.]+) s \[([0-9.]+), ([0-9.]+)\] \(90 %, (\d+) % wide\)", out[3])
    assert line, out[3]
    t, low, high, wide = map(float, line.groups())
    assert low < t < high  # (that intervals cover the truth: test_model_uncertainty.py)
    assert wide == round(100 * (high - low) / t) or abs(wide - 100 * (high - low) / t) <= 1  # printed to 4 digits


def test_recommend_upper_bound_and_stored_processes(noisy_models_json):
    model = load_model(noisy_models_json)
    assert model.processes == "q"  # from models.json: recommend needs no --processes
    grid = {"n": [4000], "q": [1, 2, 4, 8, 16]}
    mean = recommend(model, grid, "core_hours")
    upper = recommend(model, grid, "core_hours", upper=True)
    assert "efficiency" in mean and mean["q"].iloc[0] == 1
    assert (upper.set_index("q")["time"] > mean.set_index("q")["time"]).all()
    assert np.allclose(upper["predicted_mean"], model.expected(upper[["n", "q"]].to_numpy()))
    with pytest.raises(PredictError, match="no resamples"):
        recommend(Model(model.param_names, model.terms, model.coefficients), grid, upper=True)


def test_models_json_is_strict_json_with_undefined_statistics_as_null():
    """k = 1: no resamples, so no lead share (NaN); the file must still be JSON other tools parse."""
    import json

    import numpy as np

    from perfsweep.modeling import fit_model
    from perfsweep.modeling.model import Model

    x = np.array([[1.0], [2.0], [4.0], [8.0], [16.0]])
    m = fit_model(x, 2 + 3 * x[:, 0], ["n"])
    assert np.isnan(m.lead_share)
    text = json.dumps(m.to_dict(), allow_nan=False)  # raised before: NaN is not JSON
    assert '"lead_share": null' in text
    back = Model.from_dict(json.loads(text))
    assert np.isnan(back.lead_share) and back.predict([[32.0]])[0] == m.predict([[32.0]])[0]


def test_a_study_that_held_p_fixed_prices_its_runs_with_that_p(tmp_path):
    n = np.array([100, 200, 400, 800, 1600.0])
    model = fit_model(n[:, None], 0.01 + 1e-5 * n, ["n"])
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "time", "fixed": {"p": 4},
                                 "processes": None, "model": model.to_dict()}]))
    best = recommend(load_model(path), {"n": [800]}, "core_hours")
    assert best["core_hours"].iloc[0] == pytest.approx(best["time"].iloc[0] * 4 / 3600)  # every run had 4 ranks


def test_no_finite_prediction_is_refused_by_predict_and_recommend(models_json):
    model = load_model(models_json)
    for call in (lambda: predict(model, {"n": [1e300], "p": [1e-300]}),
                 lambda: recommend(model, {"n": [1e300], "p": [1e-300, 1]})):
        with pytest.raises(PredictError, match=r"has no finite value at n=1e\+300"):
            call()


def test_a_metric_that_is_not_a_time_has_no_seconds_and_is_not_recommended(tmp_path):
    n = np.array([100, 200, 400, 800, 1600.0])
    model = fit_model(n[:, None], 50 * n, ["n"])
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "rate", "fixed": {},
                                 "model": model.to_dict()}]))
    cli = [sys.executable, "-m", "perfsweep.cli"]
    out = subprocess.run([*cli, "predict", str(path), "n=800", "--metric", "rate"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.splitlines()[-1].startswith("n = 800: rate = 4e+04"), out.stdout
    assert not out.stdout.splitlines()[-1].endswith(" s")
    bad = subprocess.run([*cli, "recommend", str(path), "n=800", "--metric", "rate"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("perfsweep: --metric rate: recommend ranks configurations by run time")


def test_recommend_says_why_it_has_no_answer(tmp_path):
    n = np.array([100, 200, 400, 800, 1600.0])
    path = tmp_path / "models.json"
    for y, kwargs, message in ((0.01 + 1e-5 * n, {"min_efficiency": 0.5}, "the model has no process count 'p'"),
                               (0.0 * n, {}, "predicts no positive time at any candidate")):
        path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "time", "fixed": {},
                                     "model": fit_model(n[:, None], y, ["n"]).to_dict()}]))
        with pytest.raises(PredictError, match=message):
            recommend(load_model(path), {"n": [800]}, **kwargs)
    path.write_text("[]")  # a study whose every fit failed (models.csv has the reasons)
    with pytest.raises(PredictError, match=r"\(have: none; the study has no models: models.csv beside it says why\)"):
        load_model(path)


def test_a_process_count_that_is_not_a_whole_number_of_ranks_is_refused(models_json):
    model = load_model(models_json)
    model.processes = "p"  # as the pipeline stores it
    assert len(predict(model, {"n": 1000, "p": [1, 2.0, 64]})) == 3
    for p in (0.5, 2.5, 0, -4, float("nan")):
        for call in (lambda: predict(model, {"n": 1000, "p": [1, p]}),
                     lambda: recommend(model, {"n": 1000, "p": [p, 1]})):
            with pytest.raises(PredictError, match=r"^p=(0\.5|2\.5|0|-4|nan) is not a process count \(a whole number >= 1\)$"):
                call()


def test_recommends_efficiency_is_relative_to_the_smallest_measured_process_count(tmp_path):
    """Not to the smallest candidate: a candidate's efficiency (and so --min-efficiency) must not
    depend on which other candidates are listed; the CLI names the reference."""
    n = np.array([1000, 2000, 3000, 4000, 5000.0])
    p = np.array([2, 4, 8, 16, 32.0])
    x = np.array([(a, b) for a in n for b in p])
    model = fit_model(x, 0.5 + 2e-3 * x[:, 0] / x[:, 1], ["n", "p"], options=FitOptions(negative_params=("p",)))
    model.processes = "p"
    t = lambda p: 0.5 + 2e-3 * 4000 / p  # noqa: E731
    alone = recommend(model, {"n": 4000, "p": [8]})
    listed = recommend(model, {"n": 4000, "p": [4, 8, 64]}).set_index("p")
    assert alone["efficiency"].iloc[0] == pytest.approx(listed.loc[8, "efficiency"], rel=1e-9)
    assert listed.loc[8, "efficiency"] == pytest.approx(2 * t(2) / (8 * t(8)), rel=1e-4)
    assert listed.loc[4, "efficiency"] < 1  # p = 4 is not the reference
    assert len(recommend(model, {"n": 4000, "p": [4, 8, 64]}, min_efficiency=0.5)) == 2  # 64 ranks: 0.19
    path = tmp_path / "models.json"
    path.write_text(json.dumps([{"study": "s", "region": "all", "metric": "time", "fixed": {}, "model": model.to_dict()}]))
    out = subprocess.run([sys.executable, "-m", "perfsweep.cli", "recommend", str(path), "n=4000", "p=4,8"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "# efficiency = work at p = 2 (the smallest measured) / work, as predicted" in out.stdout
