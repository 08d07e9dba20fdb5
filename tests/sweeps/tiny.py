"""Tiny sweeps of stand-in Python apps (no MPI) whose shape the rerun and fault tests start from: each
runs once per test session; a test that changes the tree (deletes or damages records, changes the
config, runs again) works on a copy (``sweep.copy(tmp_path / "copy")``). Each is as small as what its
tests assert allows, and asks Snakemake only for the outputs they read.

- ``faults_sweep``: tests/apps/fault_app.py misbehaving in every way it can beside a study whose every
  run fails (tests/test_faults.py);
- ``tiny_faults_sweep``: a healthy fault_app sweep of 6 runs, up to its runs table (tests/test_faults.py
  damages its records);
- ``nm_sweep``: the grid of tests/test_incremental.py (2 x 2 configurations, k = 2) up to its medians;
- ``adaptive_validation_sweep``: an adaptive design with a validation point, in two rounds of
  ``perfsweep run`` with its report (tests/test_validation_sweep.py, tests/test_designs_incremental.py).

tests/README.md lists the tests that read each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import PERFSWEEP, Sweep, make_sweep
from .lane import session_sweep

FAULT_APP = Path(__file__).resolve().parents[1] / "apps" / "fault_app.py"


def fault_config(state, *, ns, k, sleep=0.0, retries=0, timeout=600, extra_studies=None, seed=1, results="results"):
    """A sweep of fault_app over n (study ``faults``); ``state`` is the app's state directory (its
    flaky and filler files), which also marks the app's processes (tests/test_faults.py looks for them)."""
    return {
        "seed": seed,
        "app": {"command": f"{sys.executable} {FAULT_APP} {{n}} {state} {sleep}", "time_pattern": r"^time: (\S+)"},
        "parameters": {"n": 1},
        "studies": {"faults": {"vary": {"n": list(ns)}}, **(extra_studies or {})},
        "repetitions": k,
        "retries": retries,
        "timeout": timeout,
        "results": str(results),
    }


# A study whose every run fails (a license server that is down), beside the fault_app study.
BROKEN_STUDY = {"broken": {"app": {"command": f"{sys.executable} -c 'import sys; sys.exit(\"no license {{n}}\")'"},
                           "parameters": {"n": 1}, "vary": {"n": [1, 2]}, "repetitions": 1}}

# fault_app's faults (3 crash, 5 SIGSEGV, 7 hang, 11 non-UTF-8 then a time, 13 garbage, 17 silence, 19 flaky)
# and healthy n around them: 7 configurations survive, enough for a model of t = 0.01 n.
FAULTS_NS = [1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 17, 19]
FAULTS_FAILED = {3: "exit code 3: fault_app: simulated crash", 5: "killed by signal 11 (SIGSEGV)",
                 7: "killed after the timeout of 2 s", 13: "not a number", 17: "not found on stdout"}


@session_sweep("faults-sweep")
def faults_sweep(work) -> Sweep:
    """FAULTS_NS x k = 2 with 1 retry and a timeout of 2 s (n = 7 hangs: 4 attempts of 2 s), beside
    BROKEN_STUDY, by ``perfsweep run c.yaml --cores 2 --no-report``: the whole workflow but the report
    (the failed study's last line names its runs table, and the survivors get their models). It exits
    non-zero (the broken study): read its ``returncode``, ``stdout`` and ``stderr``. 2 s is 20 times what a healthy run
    takes here under load."""
    (work / "state").mkdir()
    return make_sweep(work, fault_config(work / "state", ns=FAULTS_NS, k=2, retries=1, timeout=2,
                                         extra_studies=BROKEN_STUDY), "--cores", "2", "--no-report", check=False)


@session_sweep("tiny-faults-sweep")
def tiny_faults_sweep(work) -> Sweep:
    """fault_app's healthy n = 1, 2, 4 x k = 2 (6 runs), up to the runs table (no figures or models: the
    tests that read it damage records and count what is measured again). Rule runs is a target too: a
    record that is not there is a target of it (and of all), not of the runs table."""
    (work / "state").mkdir()
    return make_sweep(work, fault_config(work / "state", ns=[1, 2, 4], k=2), "--cores", "2", "--no-report",
                      targets=("runs", "results/tables/faults/runs.csv"))


NM_APP = "import sys, time; n, m = map(float, sys.argv[1:3]); time.sleep(0.01 * n * m); print('ok', n)"


def nm_config(*, n=(1, 2), k=2, cv=0.1, app=NM_APP, timeout=120, patterns=None, retries=0, results="results"):
    """tests/test_incremental.py's grid: n x m = 1, 2 (2 values each: no models), k repetitions."""
    return {
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


# what tests/test_incremental.py asks Snakemake for: every run record (rule runs) and the study's tables
NM_TARGETS = ("runs", "results/tables/nm/medians.csv")


@session_sweep("nm-sweep")
def nm_sweep(work) -> Sweep:
    """nm_config() by the real Snakemake (as tests/test_incremental.py runs it): 8 runs, up to the medians."""
    from conftest import snakemake

    sweep = Sweep(work, {})
    sweep.write_config(nm_config())
    proc = snakemake(*NM_TARGETS, "--cores", "2", "--configfile", sweep.config_file, cwd=work)
    sweep.stdout, sweep.stderr = proc.stdout, proc.stderr
    return sweep


DESIGN_APP = "import sys, time; n, m = map(float, sys.argv[1:3]); time.sleep(0.01 * n * m); print('ok')"
ADAPTIVE = {"kind": "adaptive", "extra": 0, "per_round": 2, "rounds": 1}


def design_config(design, validate=None, k=1, results="results"):
    """tests/test_designs_incremental.py's 3 x 3 grid of n and m under ``design`` (with ``validate`` points)."""
    study = {"vary": {"n": [1, 2, 3], "m": [1, 2, 3]}, "design": design}
    if validate is not None:
        study["validate"] = validate
    return {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{DESIGN_APP}\" {{n}} {{m}}"},
        "parameters": {"n": 1, "m": 1},
        "studies": {"nm": study},
        "repetitions": k,
        "results": str(results),
    }


@session_sweep("adaptive-validation-sweep")
def adaptive_validation_sweep(work) -> Sweep:
    """An adaptive study (k = 2, one round of 2 points) with one validation point (3 repetitions), by
    ``perfsweep run c.yaml --cores 2`` with its report: round 1, then round 2 with the whole workflow.
    ``stdout`` holds both streams in order (Snakemake's log of each round, then perfsweep's line that
    starts the next), as a user's terminal shows them."""
    sweep = Sweep(work, {})
    sweep.write_config(design_config(ADAPTIVE, {"points": [{"n": 6, "m": 2}], "repetitions": 3}, k=2))
    proc = subprocess.run([str(PERFSWEEP), "run", "c.yaml", "--cores", "2"], cwd=work, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    sweep.stdout = proc.stdout
    return sweep
