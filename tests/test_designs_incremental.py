"""Designs stay incremental (perfsweep.sweep.designs): the real Snakemake and ``perfsweep run``, counting
benchmark runs, as tests/test_incremental.py does for the grid."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import snakemake

pytestmark = pytest.mark.slow

APP = "import sys, time; n, m = map(float, sys.argv[1:3]); time.sleep(0.01 * n * m); print('ok')"
PERFSWEEP = Path(sys.executable).with_name("perfsweep")


def write_config(path, results, design, k=1):
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{n}} {{m}}"},
        "parameters": {"n": 1, "m": 1},
        "studies": {"nm": {"vary": {"n": [1, 2, 3], "m": [1, 2, 3]}, "design": design}},
        "repetitions": k,
        "results": str(results),
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def runs_in(output):
    return len(re.findall(r"^\s*(?:local)?rule run:", output, re.MULTILINE))


def run_jobs(cfgfile, cwd):
    proc = snakemake("--cores", "2", "--configfile", cfgfile, cwd=cwd)
    return runs_in(proc.stdout + proc.stderr)


def test_switching_designs_reruns_nothing_measured(tmp_path):
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    write_config(cfg, results, {"kind": "sparse", "extra": 1})
    assert run_jobs(cfg, tmp_path) == 6  # the lines through (1, 1): 5 points, and 1 extra point
    medians = pd.read_csv(results / "tables" / "nm" / "medians.csv")
    assert len(medians) == 6 and (results / "figures" / "nm" / "grid.png").exists()
    write_config(cfg, results, {"kind": "sparse", "extra": 2})  # one more extra point: only it
    assert run_jobs(cfg, tmp_path) == 1
    write_config(cfg, results, "full")  # the full grid: only the 2 points no design measured
    assert run_jobs(cfg, tmp_path) == 2
    assert len(pd.read_csv(results / "tables" / "nm" / "medians.csv")) == 9
    write_config(cfg, results, {"kind": "sparse", "extra": 2})  # and back: nothing
    assert run_jobs(cfg, tmp_path) == 0
    assert len(pd.read_csv(results / "tables" / "nm" / "medians.csv")) == 7
    assert len(list((results / "archive").rglob("*.json"))) == 9  # every configuration measured once


def test_an_adaptive_round_runs_only_the_points_it_added(tmp_path):
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    write_config(cfg, results, {"kind": "adaptive", "extra": 0, "per_round": 2, "rounds": 1}, k=2)
    cmd = [str(PERFSWEEP), "run", str(cfg), "--cores", "2", "--no-report", "--", str(results / "tables" / "nm" / "runs.csv")]
    # one stream, in order: Snakemake's log of each round, then perfsweep's line that starts the next
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:]
    first, _, second = out.partition("perfsweep: round 2 ")  # "round 2 of at most 8: ..." (perfsweep.steps.rounds)
    assert runs_in(first) == 10  # the 5 line points x 2 repetitions
    assert runs_in(second) == 4  # the 2 points the round added x 2 repetitions, nothing else
    state = json.loads((results / "plan" / "nm" / "points.json").read_text())
    # after its one round the design stops: for stable lead terms if the 2 points left the lead as it was
    # (first in adaptive.adaptive_round; which one depends on the measurement), else for its rounds
    stable = state["rounds"][-1]["lead"] == state["rounds"][-2]["lead"]
    assert len(state["points"]) == 2 and state["stopped"] == ("lead terms stable" if stable else "all rounds done")
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert set(runs["config_id"]) >= set(state["points"]) and len(runs) == 14
    # the same command again: the design has stopped, nothing runs
    proc = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    assert proc.returncode == 0 and runs_in(proc.stdout) == 0
    assert "round 2" not in proc.stdout
    assert len(list((results / "archive").rglob("*.json"))) == 14  # every run once
