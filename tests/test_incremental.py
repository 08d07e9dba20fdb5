"""The sweep is incremental by construction: the real Snakemake, run twice, counting benchmark runs."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import snakemake
from perfsweep.sweep.record import OTHER_LAUNCH
from sweeps.lane import lane_test
from sweeps.tiny import NM_APP, NM_TARGETS, nm_config

pytestmark = pytest.mark.slow
PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))

APP = NM_APP


def write_config(path, results="results", **keys):
    """tests/sweeps/tiny.py's nm_config (keys: n, k, cv, app, timeout, patterns, retries); results relative
    to the work directory, as in the shared nm_sweep."""
    path.write_text(yaml.safe_dump(nm_config(results=results, **keys), sort_keys=False))


def run_jobs(cfgfile, cwd, targets=NM_TARGETS):
    """Run the workflow up to ``targets`` (every record and the medians); return how many benchmark runs
    Snakemake executed."""
    proc = snakemake(*targets, "--cores", "2", "--configfile", cfgfile, cwd=cwd)
    return len(re.findall(r"^\s*(?:local)?rule run:", proc.stdout + proc.stderr, re.MULTILINE))


@lane_test
def test_reruns_only_what_changed(nm_sweep, tmp_path):
    """On a copy of the shared nm_sweep (its 8 runs: 2 n x 2 m x k=2). A new parameter value and a raised
    k in one step: exactly the 6 new configurations' runs and the 4 old ones' new repetition, which with
    18 records and 18 archived attempts at the end (every run once) shows neither step measured anything
    old again. (That nothing runs when nothing changed: the CV step here, and the last step of
    test_a_changed_launch_is_measured_again_also_where_snakemake_has_no_metadata.)"""
    assert len(re.findall(r"^\s*(?:local)?rule run:", nm_sweep.stdout + nm_sweep.stderr, re.MULTILINE)) == 8
    sweep = nm_sweep.copy(tmp_path / "copy")
    cfg, results = sweep.config_file, sweep.results

    write_config(cfg, cv=0.5)  # the CV threshold: no benchmark reruns, the table does
    assert run_jobs(cfg, sweep.work) == 0
    var = pd.read_csv(results / "tables" / "nm" / "variability.csv")
    assert set(var["cv_threshold"]) == {0.5}

    # a new parameter value (only its configurations: n=3 x 2 m x k=3) and a raised k (only the new
    # repetitions: 4 configurations x 1)
    write_config(cfg, n=(1, 2, 3), k=3, cv=0.5)
    assert run_jobs(cfg, sweep.work) == 6 + 4
    assert len(pd.read_csv(results / "tables" / "nm" / "medians.csv")) == 6
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 18 and set(runs["status"]) == {"ok"}
    assert len(list((results / "archive").rglob("*.json"))) == 18  # every run once, nothing overwritten


@lane_test
def test_a_changed_launch_is_measured_again_also_where_snakemake_has_no_metadata(nm_sweep, tmp_path):
    """The records of another launch are set aside and measured again, as `perfsweep plan` says: also
    in a copy of a results directory, where Snakemake has no metadata (its params trigger ran nothing).
    The copy is of the shared nm_sweep's results (8 runs)."""
    sweep = nm_sweep.copy(tmp_path / "work")
    cfg, results, copy = sweep.config_file, sweep.results, sweep.work / "copy"
    shutil.copytree(results, copy, symlinks=True)  # cp -a
    write_config(cfg, "copy", app=APP.replace("0.01", "0.02"))  # the app changed
    targets = ("runs",)  # every record (rule runs): no table is read here
    dry = snakemake("-n", *targets, "--cores", "2", "--configfile", cfg, cwd=sweep.work)
    assert (f"perfsweep: study nm: 8 record(s) {OTHER_LAUNCH} would be set aside under results/superseded/ and "
            "measured again") in dry.stderr
    assert not (copy / "superseded").exists()
    assert run_jobs(cfg, sweep.work, targets) == 8
    aside = sorted((copy / "superseded").rglob("rep*.json"))
    assert [p.read_bytes() for p in aside] == [p.read_bytes() for p in sorted((results / "runs").rglob("rep*.json"))]
    assert run_jobs(cfg, sweep.work, targets) == 0
    write_config(cfg, "copy")  # and back: the records of the new launch are set aside in turn
    assert run_jobs(cfg, sweep.work, targets) == 8 and len(list((copy / "superseded").rglob("rep*.json"))) == 16
    write_config(cfg, "copy", patterns={"echo": "ok (\\S+)"})  # read with another pattern: measured again
    assert run_jobs(cfg, sweep.work, targets) == 8 and len(list((copy / "superseded").rglob("rep*.json"))) == 24


@lane_test
def test_a_raised_timeout_or_retries_measure_again_only_the_runs_they_concern(tmp_path):
    """Neither the timeout nor retries: is part of a run's params. Two studies in one sweep (k = 1): in
    ``slow`` n = 2 sleeps past the timeout of 1 s, in ``flaky`` n = 2 fails until a file exists. Raising
    the timeout measures again only the runs that timed out (not the failed ones); raising retries only
    the runs that failed (their records set aside), not the whole sweep; lowering both measures nothing.
    (One sweep for both keys: each step shows also that the other key's runs were left alone. Runs not
    exclusive: two at a time on the 2 cores, so the slow runs wait out the timeout or sleep side by side.)"""
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    slow = "import sys, time; n = float(sys.argv[1]); time.sleep(1.5 if n > 1 else 0.01); print('ok')"
    flaky = "import os, sys; sys.exit(3 if sys.argv[1] == '2' and not os.path.exists('over') else 0)"

    def write(timeout, retries):
        sweep = {**nm_config(k=1, timeout=timeout, retries=retries), "exclusive": False}
        sweep["studies"] = {name: {"app": nm_config(app=code)["app"], "parameters": {"n": 1, "m": 1},
                                   "vary": {"n": [1, 2], "m": [1, 2]}}
                            for name, code in (("slow", slow), ("flaky", flaky))}
        cfg.write_text(yaml.safe_dump(sweep, sort_keys=False))

    def table(study):
        return pd.read_csv(results / "tables" / study / "runs.csv")

    targets = ("runs", "results/tables/slow/runs.csv", "results/tables/flaky/runs.csv")
    write(timeout=1, retries=0)
    assert run_jobs(cfg, tmp_path, targets) == 8
    runs = table("slow")
    assert sorted(runs.loc[runs["status"] == "timeout", "n"]) == [2, 2] and (runs["status"] == "ok").sum() == 2
    runs = table("flaky")
    assert sorted(runs.loc[runs["status"] == "failed", "n"]) == [2, 2] and (runs["status"] == "ok").sum() == 2

    write(timeout=20, retries=0)
    plan = subprocess.run([PERFSWEEP, "plan", str(cfg)], capture_output=True, text=True, check=True, cwd=tmp_path)
    slow_line, flaky_line = (next(line for line in plan.stdout.splitlines() if line.startswith(f"  {s}:"))
                             for s in ("slow", "flaky"))
    assert "4 runs (2 measured)" in slow_line and f"2 records {OTHER_LAUNCH}" in slow_line, plan.stdout
    assert "4 runs (4 measured)" in flaky_line and "another launch" not in flaky_line, plan.stdout
    assert run_jobs(cfg, tmp_path, targets) == 2  # before, every run: the timeout was part of the run's params
    assert len(list((results / "superseded").rglob("rep*.json"))) == 2
    assert set(table("slow")["status"]) == {"ok"} and len(table("slow")) == 4
    assert sorted(table("flaky")["status"]) == ["failed", "failed", "ok", "ok"]  # not a timeout: left alone

    (tmp_path / "over").touch()  # the flaky cause is gone
    write(timeout=20, retries=1)
    assert run_jobs(cfg, tmp_path, targets) == 2  # before, every run: retries was one of the run's params
    assert set(table("flaky")["status"]) == {"ok"} and len(list((results / "superseded").rglob("rep*.json"))) == 4
    write(timeout=10, retries=0)  # both lowered: the records stand
    assert run_jobs(cfg, tmp_path, targets) == 0


@lane_test
def test_bundled_repetitions_run_in_one_job_per_configuration_and_only_bundles_with_a_missing_or_superseded_record_run_again(tmp_path):
    """``bundle: repetitions``: one job per configuration with its k = 3 repetitions; a deleted record runs
    its bundle again, a changed app every bundle; then nothing."""
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    targets = ("runs", "results/tables/nm/runs.csv")

    def bundles_run(**keys):
        write_config(cfg, k=3, **keys)
        cfg.write_text(cfg.read_text() + "bundle: repetitions\n")
        proc = snakemake(*targets, "--cores", "2", "--configfile", cfg, cwd=tmp_path)
        return len(re.findall(r"^\s*(?:local)?rule run_nm:", proc.stdout + proc.stderr, re.MULTILINE)), proc.stderr

    assert bundles_run()[0] == 4  # 2 n x 2 m configurations, each with its 3 repetitions
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 12 and set(runs["status"]) == {"ok"} and set(runs["repetition"]) == {0, 1, 2}
    (results / "runs" / "nm" / "n=2_m=1" / "rep1.json").unlink()  # a deleted record: its bundle runs again
    count, err = bundles_run()
    assert count == 1 and "perfsweep: study nm: 1 bundle(s) with a missing record" in err
    count, err = bundles_run(app=APP.replace("0.01", "0.02"))  # the app changed: every bundle
    assert count == 4 and "perfsweep: study nm: 12 record(s) of another launch" in err
    assert "perfsweep: study nm: 4 bundle(s) with a missing record" in err and len(list(
        (results / "superseded").rglob("rep*.json"))) == 12
    assert bundles_run(app=APP.replace("0.01", "0.02"))[0] == 0
