"""A metric's unit and direction (perfsweep.apps.metric_kinds): declared in the config (a pattern's mapping
form) or by a built-in app, guessed from the name only as a fallback, and asked by every consumer:
`perfsweep validate --sample-output`, the models (models.json), `perfsweep predict` and compare."""

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from perfsweep.apps.metric_kinds import HIGHER, LOWER, declared, guess, kind_of, pattern_regexes
from perfsweep.config import load_config
from perfsweep.modeling.pipeline import fit_study_models
from perfsweep.sweep.spec import RunSpec

RATE = {"pattern": r"Performance: ([0-9.eE+-]+) timesteps/s", "unit": "steps/s", "better": "higher"}
CLI = [sys.executable, "-m", "perfsweep.cli"]


@pytest.mark.parametrize("name, unit, better", [
    ("time", "s", LOWER), ("comm", "s", LOWER), ("min_time", "s", LOWER),
    ("timesteps_per_s", "1/s", HIGHER),  # "time" in the name, but a rate: the old guess called it a time
    ("timesteps/s", "1/s", HIGHER), ("GFLOP/s", "1/s", HIGHER), ("bandwidth", "1/s", HIGHER),
    ("steps per second", "1/s", HIGHER), ("visits", "", LOWER), ("bytes_sent", "", LOWER), ("supertime", "s", LOWER)])
def test_the_name_is_a_fallback_guess(name, unit, better):
    kind = guess(name)
    assert (kind.unit, kind.better, kind.declared) == (unit, better, name in ("time", "comm"))


def test_a_declaration_wins_over_the_name():
    app = {"command": "x {n}", "patterns": {"timesteps_per_s": RATE, "time_per_step": {"pattern": "(.)", "better": "lower"},
                                            "gflops": "GFLOP/s: (.*)"}}
    kinds = declared(app)
    assert kind_of("timesteps_per_s", kinds).fields() == {"unit": "steps/s", "better": "higher"}
    assert kind_of("time_per_step", kinds).fields() == {"unit": "", "better": "lower"}  # no unit declared
    assert kind_of("gflops", kinds) == guess("gflops") and not kind_of("gflops", kinds).declared  # a plain regex
    assert kind_of("time", kinds).is_time and kind_of("comm", kinds).is_time
    # a row (an aggregate's, a models.json entry) says what its writer declared; one written before: the guess
    assert kind_of("gflops", kinds, row={"unit": "GFLOP/s", "better": "higher"}).unit == "GFLOP/s"
    assert kind_of("timesteps_per_s", row={"unit": float("nan"), "better": float("nan")}) == guess("timesteps_per_s")
    assert pattern_regexes(app["patterns"])["timesteps_per_s"] == RATE["pattern"]


def test_builtin_apps_declare_their_times():
    kinds = declared({"name": "ljmd"})
    assert all(kind_of(m, kinds).is_time and kind_of(m, kinds).declared for m in ("time", "init", "compute", "comm"))


def test_the_config_takes_both_forms_and_runs_read_only_the_regex(tmp_path):
    cfg = {"app": {"command": "./my_app -s {s}", "time_pattern": "Loop time: ([0-9.]+)",
                   "patterns": {"timesteps_per_s": RATE, "energy": "Energy: ([0-9.eE+-]+)"}},
           "parameters": {"s": 8}, "studies": {"s": {"vary": {"s": [8, 10, 12]}}}, "results": str(tmp_path)}
    sweep = load_config(cfg, "c.yaml")
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[0], 0)
    assert spec.patterns == {"timesteps_per_s": RATE["pattern"], "energy": "Energy: ([0-9.eE+-]+)"}


def test_validate_shows_the_declared_unit(tmp_path):
    (tmp_path / "c.yaml").write_text(json.dumps({
        "app": {"command": "./my_app -s {s}", "time_pattern": r"Loop time: ([0-9.]+)",
                "patterns": {"timesteps_per_s": RATE, "energy": r"Energy per atom: ([0-9.eE+-]+)"}},
        "parameters": {"s": 8}, "studies": {"s": {"vary": {"s": [8, 10, 12]}}}}))
    (tmp_path / "out.txt").write_text("Energy per atom: -1.5\nLoop time: 0.5 s on 1 procs\nPerformance: 40.0 timesteps/s\n")
    out = subprocess.run([*CLI, "validate", "c.yaml", "--sample-output", "out.txt"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "  time: 0.5 s" in lines and "  timesteps_per_s: 40 steps/s" in lines and "  energy: -1.5" in lines


def _sides(tmp_path, factor):
    """models.json of a study T(s, p) with its time and a declared rate, A and B (B's time x ``factor``)."""
    rng = np.random.default_rng(3)
    paths = []
    for side, f in (("a", 1.0), ("b", factor)):
        rows = []
        for s in (8, 10, 12, 14, 16):
            for p in (1, 2):
                t = f * (0.01 + 2e-5 * s ** 3 * (0.2 + 0.8 / p)) * np.exp(rng.normal(0, 0.01, 5))
                for metric, values, kind in (("time", t, ("s", "lower")), ("timesteps_per_s", 20 / t, ("steps/s", "higher"))):
                    rows.append({"config_id": f"s={s}_p={p}", "s": s, "p": p, "region": "all", "metric": metric,
                                 "median": float(np.median(values)), "values": " ".join(map(str, values)),
                                 "unit": kind[0], "better": kind[1]})
        _, models, _ = fit_study_models(pd.DataFrame(rows), "s_p", ["s", "p"], {}, processes="p")
        paths.append(tmp_path / f"{side}.json")
        paths[-1].write_text(json.dumps(models))
    return paths


@pytest.mark.parametrize("factor, verdict", [(1.2, "regression"), (1 / 1.2, "improvement")])
def test_compare_judges_a_rate_by_its_declared_direction_without_a_share(tmp_path, factor, verdict):
    """B 20 % slower: its time is a regression and so is its rate, which fell (more is better); a rate is
    no part of the total time, so it has no share and no impact, and it still gates (the whole run's)."""
    a, b = _sides(tmp_path, factor)
    out = subprocess.run([*CLI, "compare", str(a), str(b), "--format", "json"], capture_output=True, text=True)
    assert out.returncode == (1 if verdict == "regression" else 0), out.stdout[-2000:] + out.stderr
    rows = {r["metric"]: r for r in json.loads(out.stdout)["rows"]}
    rate, time = rows["timesteps_per_s"], rows["time"]
    assert rate["verdict"] == time["verdict"] == verdict, (rate, time)
    assert rate["ratio"] == pytest.approx(1 / factor, rel=0.05)
    assert rate["share"] is None and rate["impact"] is None and rate["gated"]
    assert "a rate in steps/s: more is better" in rate["notes"], rate["notes"]
    assert time["share"] == pytest.approx(1.0) and time["impact"] == pytest.approx(factor - 1, abs=0.05)
    csv = subprocess.run([*CLI, "compare", str(a), str(b), "--format", "csv"], capture_output=True, text=True).stdout
    table = pd.read_csv(io.StringIO(csv)).set_index("metric")
    assert np.isnan(table.loc["timesteps_per_s", "share"]) and table.loc["time", "share"] == pytest.approx(1.0)


def test_predict_prints_the_declared_unit_and_guesses_for_older_files(tmp_path):
    a, _ = _sides(tmp_path, 1.0)
    out = subprocess.run([*CLI, "predict", str(a), "s=24", "p=1", "--metric", "timesteps_per_s"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# all/timesteps_per_s (steps/s, higher is better): 1 / (")
    assert out.stdout.splitlines()[-1].startswith("s = 24, p = 1: timesteps_per_s = ")
    assert " steps/s [" in out.stdout.splitlines()[-1]
    entries = json.loads(a.read_text())  # a models.json written before the declaration
    for e in entries:
        del e["unit"], e["better"]
    a.write_text(json.dumps(entries))
    old = subprocess.run([*CLI, "predict", str(a), "s=24", "p=1", "--metric", "timesteps_per_s"],
                         capture_output=True, text=True)
    assert "(1/s, higher is better, guessed from the name)" in old.stdout.splitlines()[0]
    bad = subprocess.run([*CLI, "recommend", str(a), "s=24", "p=1,2", "--metric", "timesteps_per_s"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "give a time metric" in bad.stderr
