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
from sweeps.lane import lane_test
from sweeps.tiny import DESIGN_APP, design_config

pytestmark = pytest.mark.slow

APP = DESIGN_APP
PERFSWEEP = Path(sys.executable).with_name("perfsweep")


def runs_in(output):
    return len(re.findall(r"^\s*(?:local)?rule run:", output, re.MULTILINE))


def run_jobs(cfgfile, cwd, *targets):
    proc = snakemake(*targets, "--cores", "2", "--configfile", cfgfile, cwd=cwd)
    return runs_in(proc.stdout + proc.stderr)


@lane_test
def test_switching_designs_or_adding_validation_points_reruns_nothing_measured(tmp_path):
    """One sweep (k = 2) through designs and then validation points: each step measures only what no
    step measured before. Up to the grid figure first (it shows the design's points), then up to every
    record and the medians, and with validation points up to the models (what they change). The runs
    are not exclusive (two at a time on the 2 cores): what is counted is which runs each step measures."""
    cfg, results = tmp_path / "c.yaml", tmp_path / "results"
    upto = ("runs", f"{results}/tables/nm/medians.csv")
    models = results / "models" / "nm" / "models.json"

    def write(design, validate=None):
        cfg.write_text(yaml.safe_dump({**design_config(design, validate, k=2, results=results), "exclusive": False},
                                      sort_keys=False))

    def medians():
        table = pd.read_csv(results / "tables" / "nm" / "medians.csv")
        return table[~table["validation"]] if "validation" in table else table

    write({"kind": "sparse", "extra": 1})
    assert run_jobs(cfg, tmp_path, *upto, f"{results}/figures/nm/grid.png") == 6 * 2  # the lines through (1, 1): 5 points, and 1 extra point
    assert len(medians()) == 6 and (results / "figures" / "nm" / "grid.png").exists()
    write({"kind": "sparse", "extra": 2})  # one more extra point: only it
    assert run_jobs(cfg, tmp_path, *upto) == 1 * 2
    write("full")  # the full grid: only the 2 points no design measured
    assert run_jobs(cfg, tmp_path, *upto) == 2 * 2
    assert len(medians()) == 9

    # a validation point: its runs only, with the study's k
    write("full", [{"n": 6, "m": 2}])
    assert run_jobs(cfg, tmp_path, *upto, models) == 1 * 2
    before = models.stat().st_mtime_ns
    write("full", [{"n": 6, "m": 2}, {"n": 3, "m": 6}])  # one more: only it, and the stages after the runs
    proc = snakemake(*upto, models, "--cores", "2", "--configfile", cfg, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert runs_in(out) == 2  # the new point's two repetitions, nothing else measured
    assert "rule models:" in out and models.stat().st_mtime_ns > before
    entry = next(e for e in json.loads(models.read_text()) if e["region"] == "all" and e["metric"] == "time")
    assert sorted(list(p["parameters"].values()) for p in entry["validation"]) == [[3.0, 6.0], [6.0, 2.0]]

    write({"kind": "sparse", "extra": 2}, [{"n": 6, "m": 2}, {"n": 3, "m": 6}])  # and back: nothing
    assert run_jobs(cfg, tmp_path, *upto, models) == 0
    assert len(medians()) == 7
    assert len(list((results / "archive").rglob("*.json"))) == (9 + 2) * 2  # every configuration measured once


def test_an_adaptive_round_runs_only_the_points_it_added(adaptive_validation_sweep, tmp_path):
    """The shared adaptive_validation_sweep (tests/sweeps/tiny.py): k = 2, one round of 2 points, and a
    validation point of 3 repetitions (measured in round 1, tests/test_validation_sweep.py)."""
    sweep = adaptive_validation_sweep
    results = sweep.results
    # one stream, in order: Snakemake's log of each round, then perfsweep's line that starts the next
    first, _, second = sweep.stdout.partition("perfsweep: round 2 ")  # "round 2 of at most 8: ..." (perfsweep.steps.rounds)
    assert runs_in(first) == 10 + 3  # the 5 line points x 2 repetitions (and the validation point's 3)
    assert runs_in(second) == 4  # the 2 points the round added x 2 repetitions, nothing else
    state = json.loads((results / "plan" / "nm" / "points.json").read_text())
    # after its one round the design stops: for stable lead terms if the 2 points left the lead as it was
    # (first in adaptive.adaptive_round; which one depends on the measurement), else for its rounds
    stable = state["rounds"][-1]["lead"] == state["rounds"][-2]["lead"]
    assert len(state["points"]) == 2 and state["stopped"] == ("lead terms stable" if stable else "all rounds done")
    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert set(runs["config_id"]) >= set(state["points"]) and len(runs[~runs["validation"]]) == 14
    # the same command again (on a copy, up to the runs table): the design has stopped, nothing runs
    copy = sweep.copy(tmp_path / "copy")
    proc = subprocess.run([str(PERFSWEEP), "run", "c.yaml", "--cores", "2", "--no-report", "--",
                           "results/tables/nm/runs.csv"], cwd=copy.work, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    assert proc.returncode == 0 and runs_in(proc.stdout) == 0, proc.stdout[-3000:]
    assert "round 2" not in proc.stdout
    assert len(list((copy.results / "archive").rglob("*.json"))) == 14 + 3  # every run once
