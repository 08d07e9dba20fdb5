"""Adaptive repetitions (perfsweep.steps.rounds): the targets, the config keys, and rounds of the real Snakemake
through `perfsweep run` that measure only what is missing."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import BIN
from perfsweep import layout, stats
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.steps import rounds
from perfsweep.sweep import plan
from sweeps.lane import lane_test

# An app whose printed time is fixed per configuration and call: n=1 always 1.0 (CV 0); n=2 alternates
# 1.0, 1.2, 1.0, ... (CV about 0.1). Each call claims the next index of its configuration atomically.
APP = ("import os, sys; n = sys.argv[1]; i = 0\n"
       "while True:\n"
       "    try: os.close(os.open('calls/' + n + '-' + str(i), os.O_CREAT | os.O_EXCL)); break\n"
       "    except FileExistsError: i += 1\n"
       "print('time', 1.0 if n == '1' else (1.0, 1.2)[i % 2])")


def config(results, repetitions, **variability):
    return {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{n}}", "time_pattern": "time ([0-9.]+)"},
        "parameters": {"n": 1},
        "studies": {"s": {"vary": {"n": [1, 2]}}},
        "repetitions": repetitions,
        "variability": {"cv_threshold": 0.5, **variability},
        "results": str(results),
    }


def perfsweep_run(tmp_path, cfg, *snakemake_args, report=False):
    """`perfsweep run` (its rounds), with --no-report unless ``report``; returns the records measured by it
    as {(config_id, rep)} and what it printed on stdout."""
    (tmp_path / "calls").mkdir(exist_ok=True)
    before = set(_records(tmp_path))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = subprocess.run([str(BIN / "perfsweep"), "run", "c.yaml", "--cores", "2", *([] if report else ["--no-report"]),
                           *(["--", *snakemake_args] if snakemake_args else [])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return set(_records(tmp_path)) - before, proc.stdout


def _records(tmp_path):
    """Every archived attempt (each measurement leaves one): (config_id, rep, archive name)."""
    for path in (tmp_path / "results" / "archive").rglob("*.json"):
        yield path.parent.name, int(path.name.split(".")[0][3:]), path.name


def measured(new):
    return sorted((cid, rep) for cid, rep, _ in new)


@pytest.mark.slow
@lane_test
def test_tightening_the_target_or_raising_max_runs_only_the_missing_repetitions(tmp_path):
    """One sweep, four `perfsweep run`s: a loose target that both configurations meet; a tightened one (with
    the HTML report, the rounds and the whole workflow's start as they come); the same again (nothing);
    a raised max. Each measures only the repetitions that are missing. The whole workflow is asked for up
    to the variability table, but in the start with the report (the figures add time, not cases), and in
    the first, which is asked for the records only (rule runs: no table of it is read)."""
    results = tmp_path / "results"
    table = f"{results}/tables/s/variability.csv"
    new, _ = perfsweep_run(tmp_path, config(results, {"min": 2, "max": 6, "until": {"cv": 0.2}}), "runs")
    assert measured(new) == [("n=1", 0), ("n=1", 1), ("n=2", 0), ("n=2", 1)]  # CV 0 and 0.12: both met

    # a tightened target: the steady n=1 meets it, n=2 (CV about 0.1) gets a batch of min more (round 2), up
    # to max. Snakemake's -q takes values: the rounds' target must not be swallowed by it
    reps = {"min": 2, "max": 4, "until": {"cv": 0.01}}
    new, out = perfsweep_run(tmp_path, config(results, reps), "-q", report=True)
    assert measured(new) == [("n=2", 2), ("n=2", 3)]
    assert "round 2" in out and "miss the repetition target" in out
    plan = json.loads((results / "plan" / "s" / "repetitions.json").read_text())
    assert plan == {"n=1": 2, "n=2": 4}
    # `perfsweep run` without --no-report: the rounds, then one Snakemake for the whole workflow that also
    # writes the report (--report-after-run), not a Snakemake more after it (each start costs a DAG):
    # round 1, then round 2 (its repetitions reach max: nothing can be planned after it) with the whole workflow
    starts = [line for line in out.splitlines() if line.startswith("+ ")]
    assert ["runs" in s.split() for s in starts] == [True, False]
    assert [("--report-after-run" in s.split(), str(results / "report.html") in s.split()) for s in starts] \
        == [(False, False), (True, True)]
    assert (results / "report.html").stat().st_size > 0 and "perfsweep: report written" in out

    new, _ = perfsweep_run(tmp_path, config(results, reps), table)
    assert new == set()  # nothing changed: nothing measured

    new, _ = perfsweep_run(tmp_path, config(results, {**reps, "max": 6}), table)
    assert measured(new) == [("n=2", 4), ("n=2", 5)]  # only the missing repetitions of n=2
    runs = pd.read_csv(results / "tables" / "s" / "runs.csv")
    assert sorted(runs.groupby("config_id").size().items()) == [("n=1", 2), ("n=2", 6)]
    assert len(list((results / "archive").rglob("*.json"))) == 8  # each run once
    var = pd.read_csv(table).set_index("config_id")
    assert var.loc["n=2", "n_runs"] == 6 and var.loc["n=1", "n_runs"] == 2


@pytest.mark.slow
@lane_test
def test_remeasure_measures_only_flagged_configurations_again(tmp_path):
    # a fixed k with policy remeasure: configurations above the CV threshold are measured again, up to 2k
    results = tmp_path / "results"
    new, out = perfsweep_run(tmp_path, config(results, 2, cv_threshold=0.05, policy="remeasure"),
                             f"{results}/tables/s/medians.csv")  # (the figures add time, not cases)
    assert measured(new) == [("n=1", 0), ("n=1", 1), ("n=2", 0), ("n=2", 1), ("n=2", 2), ("n=2", 3)]
    assert "CV <= 5 % (remeasure)" in out
    agg = pd.read_csv(results / "tables" / "s" / "medians.csv").set_index("config_id")
    assert agg.loc["n=2", "n_runs"] == 4 and bool(agg.loc["n=2", "flagged"])  # still above: kept, flagged
    assert agg.loc["n=1", "n_runs"] == 2 and not bool(agg.loc["n=1", "flagged"])


@pytest.mark.slow
@lane_test
def test_points_an_adaptive_design_adds_get_adaptive_repetitions_too(tmp_path):
    app = "import random, sys; a, b = map(float, sys.argv[1:]); print('time', 0.01 * a * b * (1 + 0.1 * random.random()))"
    cfg = {"app": {"command": f"{sys.executable} -c \"{app}\" {{a}} {{b}}", "time_pattern": "time ([0-9.]+)"},
           "parameters": {"a": 1, "b": 1}, "results": str(tmp_path / "results"),
           "repetitions": {"min": 1, "max": 2, "until": {"cv": 0.0001}},  # every configuration misses it
           "studies": {"s": {"vary": {"a": [1, 2, 3], "b": [1, 2, 3]},
                             "design": {"kind": "adaptive", "base": "centre", "extra": 0, "per_round": 2, "rounds": 1}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    plan = subprocess.run([str(BIN / "perfsweep"), "plan", "c.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert "5 runs (0 measured, up to 14 with its rounds and adaptive repetitions)" in plan.stdout, plan.stdout
    new, _ = perfsweep_run(tmp_path, cfg, "runs")  # the records only (no table, model or figure is read)
    points = json.loads((tmp_path / "results" / "plan" / "s" / "points.json").read_text())["points"]
    assert len(points) == 2  # the design's round added two points to the 5 of the lines ...
    per_config = pd.Series([cid for cid, _, _ in new]).value_counts()
    assert len(per_config) == 7 and (per_config == 2).all(), per_config  # ... and they were repeated to max too


def test_config_keys(tmp_path):
    base = config(tmp_path / "r", 3)
    s = load_config(base).studies[0]
    assert (s.repetitions, s.max_repetitions, s.until) == (3, 3, {})
    s = load_config({**base, "repetitions": {"max": 10}}).studies[0]
    assert (s.repetitions, s.max_repetitions, s.until) == (3, 10, {"cv": 0.5})  # until: the CV threshold
    s = load_config({**base, "repetitions": {"min": 4, "max": 9, "until": {"ci": 0.05}}}).studies[0]
    assert (s.repetitions, s.max_repetitions, s.until) == (4, 9, {"ci": 0.05, "level": 0.95})
    study = {**base["studies"]["s"], "repetitions": {"min": 2, "max": 5, "until": {"cv": 0.02}}}
    s = load_config({**base, "studies": {"s": study}}).studies[0]
    assert (s.repetitions, s.max_repetitions, s.until) == (2, 5, {"cv": 0.02})
    s = load_config({**base, "variability": {"policy": "remeasure"}}).studies[0]
    assert (s.repetitions, s.max_repetitions) == (3, 6)
    for bad, where in (({"min": 5, "max": 3}, "repetitions.max: 3 is below min 5"),
                       ({"min": 3}, "repetitions: 'max' is a required property"),
                       ({"max": 5, "until": {"level": 0.9}}, "repetitions.until.level: only with ci"),
                       ({"max": 5, "until": {"cv": 0}}, "repetitions.until.cv: 0 is less than or equal"),
                       ({"max": 5, "until": {"sd": 1}}, "repetitions.until: unknown key(s) ('sd' was unexpected)"),
                       (0, "repetitions: 0 is less than the minimum of 1")):
        with pytest.raises(ConfigError, match=None) as err:
            load_config({**base, "repetitions": bad}, source="c.yaml")
        assert str(err.value).startswith(f"c.yaml: {where}"), str(err.value)
    with pytest.raises(ConfigError, match="bundle: repetitions would rerun whole bundles"):
        load_config({**base, "repetitions": {"max": 5}, "bundle": "repetitions"})
    with pytest.raises(ConfigError, match="variability.policy: remeasure with bundle: repetitions"):
        load_config({**base, "variability": {"policy": "remeasure"}, "bundle": "repetitions"})
    for bad in ({"cv": float("nan")}, {"ci": float("inf")}, {"ci": 0.05, "level": float("nan")}):
        with pytest.raises(ConfigError, match=r"repetitions.until.(cv|ci|level): (nan|inf) is not finite"):
            load_config({**base, "repetitions": {"max": 5, "until": bad}})
    # a whole number written as 3.0 (YAML's float; JSON Schema's integer) is the count 3
    s = load_config({**base, "repetitions": {"min": 2.0, "max": 4.0}}).studies[0]
    assert (s.repetitions, s.max_repetitions) == (2, 4) and type(s.repetitions) is int
    assert load_config({**base, "repetitions": 3.0}).n_runs() == 6


def test_targets():
    assert rounds.shortfall([1.0, 1.0, 1.0], {"cv": 0.05}, None, batch=3) is None
    assert rounds.shortfall([1.0, 1.2, 1.0], {"cv": 0.05}, None, batch=3) == 6
    assert rounds.shortfall([1.0, 1.2, 1.0], {"cv": 0.2}, 0.05, batch=3) == 6  # remeasure's threshold
    assert rounds.shortfall([1.0], {"cv": 0.5}, None, batch=2) == 3  # one good run: no CV yet
    # the median's 95 % interval needs 6 values (its extremes then cover 1 - 2/64 = 0.97)
    assert stats.min_ci_runs(0.95) == 6 and stats.median_ci([1.0] * 5) is None
    assert rounds.shortfall([1.0] * 5, {"ci": 0.05, "level": 0.95}, None) == 6
    assert stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0, 6.0]) == (1.0, 3.5, 6.0)
    x = [1.0 + 0.01 * k for k in range(10)]  # 95 %: x_(2)..x_(9) around 1.045: within +-3.4 %
    assert stats.median_ci(x) == (1.01, pytest.approx(1.045), 1.08)
    assert rounds.shortfall(x, {"ci": 0.05}, None) is None
    assert rounds.shortfall(x, {"ci": 0.017}, None) == 39  # 10 x (0.0335 / 0.017)^2, rounded up


def test_planned_repetitions_within_min_and_max(tmp_path):
    sweep = load_config({**config(tmp_path / "r", {"min": 2, "max": 5})})
    study = sweep.studies[0]
    assert plan.planned_repetitions(study, tmp_path / "r") == {"n=1": 2, "n=2": 2}
    path = layout.plan_file(tmp_path / "r", "s", layout.REPETITIONS_FILE)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"n=1": 9, "n=2": 4, "n=7": 3}))
    assert plan.planned_repetitions(study, tmp_path / "r") == {"n=1": 5, "n=2": 4}  # a lowered max
    path.write_text("{not json")
    assert plan.planned_repetitions(study, tmp_path / "r") == {"n=1": 2, "n=2": 2}


def test_study_records_by_configuration_and_repetition(tmp_path):
    from perfsweep.sweep.record import study_records
    from perfsweep.stats import ok_times

    for cid, k, text in (("n=1", 0, '{"status": "ok", "time": 1.5}'), ("n=1", 1, '{"status": "failed", "time": null}'),
                         ("n=1", 10, '{"status": "ok", "time": 2}'), ("n=2", 0, "{truncated"), ("n=2", 1, "[1.0]")):
        path = tmp_path / "runs" / "s" / cid / f"rep{k}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    got = study_records(tmp_path, "s")
    assert set(got) == {"n=1"} and set(got["n=1"]) == {0, 1, 10}  # damaged records count as not measured
    assert ok_times(got["n=1"].values()) == [1.5, 2.0]
    assert study_records(tmp_path, "other") == {}


def test_rounds_stop_when_no_step_plans_more(monkeypatch, capsys):
    calls, plans = [], iter([True, True, False])
    sweep = load_config(config("r", 3))  # (run_rounds gives the steps its adaptive designs' points; none here)
    monkeypatch.setattr(rounds, "ROUND_STEPS", [lambda sweep, results: rounds.Planned(next(plans))])
    assert rounds.run_rounds(lambda targets: calls.append(targets) or 0, sweep=sweep, results_dir="r") == 0
    assert calls == [["runs"]] * 3 + [[]] and "round 3 of at most" in capsys.readouterr().out
    plans, calls[:] = iter([True] * 10), []
    assert rounds.run_rounds(lambda targets: calls.append(targets) or 0, sweep, "r", max_rounds=2) == 0
    assert calls == [["runs"]] * 2 + [[]] and "stopped after 2 rounds" in capsys.readouterr().out
    calls[:] = []
    assert rounds.run_rounds(lambda targets: calls.append(targets) or len(targets), sweep, "r") == 1
    assert calls == [["runs"], []]  # a failed round ends the rounds; the rest is still built (keep-going)
    # a step that can plan nothing after what it planned (settled): that work comes with the whole workflow
    calls[:] = []
    monkeypatch.setattr(rounds, "ROUND_STEPS", [lambda sweep, results: rounds.Planned(True, settled=True)])
    assert rounds.run_rounds(lambda targets: calls.append(targets) or 0, sweep, "r") == 0
    assert calls == [["runs"], []] and "round 2, the last" in capsys.readouterr().out
    # no step can plan anything for this sweep (a fixed k): one invocation of the whole workflow
    calls[:] = []
    fixed = load_config(config("r", 3))
    monkeypatch.setattr(rounds, "ROUND_STEPS", [rounds.adaptive_repetitions])
    assert rounds.run_rounds(lambda targets: calls.append(targets) or 0, fixed, "r") == 0 and calls == [[]]
    assert rounds.adaptive_repetitions.active(load_config(config("r", {"max": 4})))


def test_repetitions_settled_once_every_unmeasured_configuration_is_planned_to_max(tmp_path):
    sweep = load_config(config(tmp_path / "r", {"min": 2, "max": 4}))
    study = sweep.study("s")
    assert rounds.adaptive_repetitions(sweep, tmp_path / "r") == (False, False)  # 2 of 4 planned, none measured
    for cid in ("n=1", "n=2"):
        for k in range(2):
            path = tmp_path / "r" / "runs" / "s" / cid / f"rep{k}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"status": "ok", "time": 1.0 if cid == "n=1" else 1.0 + 2 * k}))
    # n=1 meets the target; n=2 (CV 0.71 > 0.5) misses it: planned to 4 = max, so nothing can follow
    assert rounds.adaptive_repetitions(sweep, tmp_path / "r") == (True, True)
    assert plan.planned_repetitions(study, tmp_path / "r") == {"n=1": 2, "n=2": 4}
    assert rounds.adaptive_repetitions(sweep, tmp_path / "r") == (False, True)  # nothing new measured
    sweep = load_config(config(tmp_path / "r", {"min": 2, "max": 6}))  # a batch of 2 more, still below 6
    assert rounds.adaptive_repetitions(sweep, tmp_path / "r") == (False, False)  # 4 planned, 2 measured


def test_a_users_report_is_written_by_the_last_start_only():
    """Snakemake given --report only writes a report: a user's ``-- --report r.zip`` must not reach the rounds'
    starts; it replaces the default report.html of the last start (with --report-after-run)."""
    from perfsweep.cli.run import _own_report
    from perfsweep.errors import UserError

    assert _own_report(["-q", "--report", "r.zip", "--report-after-run", "t.csv"], "d.html") == (["-q", "t.csv"], "r.zip")
    assert _own_report(["--report=r.zip"], "d.html") == ([], "r.zip")
    assert _own_report(["-q"], "d.html") == (["-q"], "d.html")
    with pytest.raises(UserError, match="--report needs a file"):
        _own_report(["--report"], "d.html")
