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

pytestmark = pytest.mark.slow
PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))

APP = "import sys, time; n, m = map(float, sys.argv[1:3]); time.sleep(0.01 * n * m); print('ok', n)"


def write_config(path, results, *, n=(1, 2), k=2, cv=0.1, app=APP, timeout=120, patterns=None, retries=0):
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{app}\" {{n}} {{m}}",
                **({"patterns": patterns} if patterns else {})},
        "parameters": {"n": 1, "m": 1},
        "studies": {"nm": {"vary": {"n": list(n), "m": [1, 2]}}},
        "repetitions": k,
        "variability": {"cv_threshold": cv},
        "results": str(results),
        "timeout": timeout,
        "retries": retries,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def run_jobs(cfgfile, cwd):
    """Run the workflow; return how many benchmark runs Snakemake executed."""
    proc = snakemake("--cores", "2", "--configfile", cfgfile, cwd=cwd)
    return len(re.findall(r"^\s*(?:local)?rule run:", proc.stdout + proc.stderr, re.MULTILINE))


def test_reruns_only_what_changed(tmp_path):
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    write_config(cfg, results)
    assert run_jobs(cfg, tmp_path) == 8  # 2 n x 2 m x k=2
    assert run_jobs(cfg, tmp_path) == 0  # nothing changed

    write_config(cfg, results, cv=0.5)  # the CV threshold: no benchmark reruns, the table does
    assert run_jobs(cfg, tmp_path) == 0
    var = pd.read_csv(results / "tables" / "nm" / "variability.csv")
    assert set(var["cv_threshold"]) == {0.5}

    write_config(cfg, results, n=(1, 2, 3), cv=0.5)  # a new parameter value: only its configurations
    assert run_jobs(cfg, tmp_path) == 4  # n=3 x 2 m x k=2
    assert len(pd.read_csv(results / "tables" / "nm" / "medians.csv")) == 6

    write_config(cfg, results, n=(1, 2, 3), k=3, cv=0.5)  # raise k: only the new repetitions
    assert run_jobs(cfg, tmp_path) == 6  # 6 configurations x 1 new repetition
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 18 and set(runs["status"]) == {"ok"}
    assert len(list((results / "archive").rglob("*.json"))) == 18  # every run once, nothing overwritten


def test_a_changed_launch_is_measured_again_also_where_snakemake_has_no_metadata(tmp_path):
    """The records of another launch are set aside and measured again, as `perfsweep plan` says: also
    in a copy of a results directory, where Snakemake has no metadata (its params trigger ran nothing)."""
    cfg, results, copy = tmp_path / "c.yaml", tmp_path / "results", tmp_path / "copy"
    write_config(cfg, results)
    assert run_jobs(cfg, tmp_path) == 8
    shutil.copytree(results, copy, symlinks=True)  # cp -a
    write_config(cfg, copy, app=APP.replace("0.01", "0.02"))  # the app changed
    dry = snakemake("-n", "--cores", "2", "--configfile", cfg, cwd=tmp_path)
    assert (f"perfsweep: study nm: 8 record(s) {OTHER_LAUNCH} would be set aside under results/superseded/ and "
            "measured again") in dry.stderr
    assert not (copy / "superseded").exists()
    assert run_jobs(cfg, tmp_path) == 8
    aside = sorted((copy / "superseded").rglob("rep*.json"))
    assert [p.read_bytes() for p in aside] == [p.read_bytes() for p in sorted((results / "runs").rglob("rep*.json"))]
    assert run_jobs(cfg, tmp_path) == 0
    write_config(cfg, copy)  # and back: the records of the new launch are set aside in turn
    assert run_jobs(cfg, tmp_path) == 8 and len(list((copy / "superseded").rglob("rep*.json"))) == 16
    write_config(cfg, copy, patterns={"echo": "ok (\\S+)"})  # read with another pattern: measured again
    assert run_jobs(cfg, tmp_path) == 8 and len(list((copy / "superseded").rglob("rep*.json"))) == 24


def test_a_raised_timeout_measures_again_only_the_runs_that_timed_out(tmp_path):
    """The timeout is not part of a run's params: raising it after some runs timed out measures those
    (their records set aside), not the whole sweep; lowering it measures nothing."""
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    slow = "import sys, time; n = float(sys.argv[1]); time.sleep(3 if n > 1 else 0.01); print('ok')"
    write_config(cfg, results, app=slow, timeout=1)
    assert run_jobs(cfg, tmp_path) == 8
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert sorted(runs.loc[runs["status"] == "timeout", "n"]) == [2, 2, 2, 2] and (runs["status"] == "ok").sum() == 4
    write_config(cfg, results, app=slow, timeout=20)
    plan = subprocess.run([PERFSWEEP, "plan", str(cfg)], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "8 runs (4 measured)" in plan.stdout and f"4 records {OTHER_LAUNCH}" in plan.stdout
    assert run_jobs(cfg, tmp_path) == 4  # before, every run: the timeout was part of the run's params
    assert len(list((results / "superseded").rglob("rep*.json"))) == 4
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 8 and set(runs["status"]) == {"ok"}
    write_config(cfg, results, app=slow, timeout=10)  # lowered: the records stand
    assert run_jobs(cfg, tmp_path) == 0


def test_raised_retries_measure_again_only_the_runs_that_failed(tmp_path):
    """retries: is not part of a run's params either: raising it gives the failed runs the attempts they
    now have (their records set aside), not the whole sweep a new measurement."""
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    flaky = "import os, sys; sys.exit(3 if sys.argv[1] == '2' and not os.path.exists('over') else 0)"
    write_config(cfg, results, app=flaky)
    assert run_jobs(cfg, tmp_path) == 8
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert sorted(runs.loc[runs["status"] == "failed", "n"]) == [2, 2, 2, 2]
    (tmp_path / "over").touch()  # the flaky cause is gone
    write_config(cfg, results, app=flaky, retries=1)
    assert run_jobs(cfg, tmp_path) == 4  # before, every run: retries was one of the run's params
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert set(runs["status"]) == {"ok"} and len(list((results / "superseded").rglob("rep*.json"))) == 4
    write_config(cfg, results, app=flaky, retries=0)  # lowered: nothing
    assert run_jobs(cfg, tmp_path) == 0


def test_bundled_repetitions_run_in_one_job_per_configuration(tmp_path):
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    write_config(cfg, results, k=3)
    text = cfg.read_text() + "bundle: repetitions\n"
    cfg.write_text(text)
    proc = snakemake("--cores", "2", "--configfile", cfg, cwd=tmp_path)
    jobs = re.findall(r"^\s*(?:local)?rule run_nm:", proc.stdout + proc.stderr, re.MULTILINE)
    assert len(jobs) == 4  # 2 n x 2 m configurations, each with its 3 repetitions
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 12 and set(runs["status"]) == {"ok"} and set(runs["repetition"]) == {0, 1, 2}


def test_bundles_with_a_missing_or_superseded_record_run_again(tmp_path):
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    write_config(cfg, results, k=2)
    cfg.write_text(cfg.read_text() + "bundle: repetitions\n")

    def bundles_run():
        proc = snakemake("--cores", "2", "--configfile", cfg, cwd=tmp_path)
        return len(re.findall(r"^\s*(?:local)?rule run_nm:", proc.stdout + proc.stderr, re.MULTILINE)), proc.stderr

    assert bundles_run()[0] == 4
    (results / "runs" / "nm" / "n=2_m=1" / "rep1.json").unlink()  # a deleted record: its bundle runs again
    count, err = bundles_run()
    assert count == 1 and "perfsweep: study nm: 1 bundle(s) with a missing record" in err
    write_config(cfg, results, k=2, app=APP.replace("0.01", "0.02"))  # the app changed: every bundle
    cfg.write_text(cfg.read_text() + "bundle: repetitions\n")
    count, err = bundles_run()
    assert count == 4 and "perfsweep: study nm: 8 record(s) of another launch" in err
    assert "perfsweep: study nm: 4 bundle(s) with a missing record" in err and len(list(
        (results / "superseded").rglob("rep*.json"))) == 8
    assert bundles_run()[0] == 0
