"""A compiled MPI program swept as a user's own app (issue 44, "Rates for real apps"): tests/apps/ljrate.c,
a Lennard-Jones benchmark in C built here with the `mpicc` of the MPICH wheel in the venv, prints its loop
time and its timesteps/s. The config declares the rate's unit and direction; a real `perfsweep run` sweeps
s = 8-16 (8-20 where it predicts beyond the grid) and p = 1-3 on 2 cores (p = 3 oversubscribed) and
measures s = 24 beside."""

import json
import os
import subprocess

import pandas as pd
import pytest

from conftest import BIN, REPO

SOURCE = REPO / "tests" / "apps" / "ljrate.c"
CONFIG = {
    # -clock cpu: the ranks' CPU time outside MPI (tests/apps/ljrate.c). This 2-core host is shared with other
    # jobs: under a load of 6 the wall time of the same run moved 20-100 % from one minute to the next (p = 2
    # up to 8x, a rank polling in MPI while its partner waited for a core), its CPU time outside MPI 1-4 %
    "app": {"command": "{launcher} ./ljrate -s {s} -steps 20 -clock cpu",
            "time_pattern": r"Loop time: ([0-9.eE+-]+) s",
            "patterns": {"timesteps_per_s": {"pattern": r"Performance: ([0-9.eE+-]+) timesteps/s",
                                             "unit": "steps/s", "better": "higher"}}},
    "parameters": {"s": 8, "p": 1},
    "repetitions": 3,
    "timeout": 120,
    "results": "results",
    "studies": {"s_p": {"vary": {"s": [8, 10, 12, 14, 16], "p": [1, 2, 3]},
                        "validate": {"points": [{"s": 24, "p": 1}, {"s": 24, "p": 2}], "repetitions": 3}}},
}


def build(where):
    """ljrate built with the MPICH wheel's mpicc (the venv's bin/, next to the mpiexec that launches it)."""
    mpicc = BIN / "mpicc"
    if not mpicc.is_file():
        pytest.skip(f"no {mpicc}: the venv's MPICH wheel ships no mpicc, so no C program can be built against it")
    out = where / "ljrate"
    proc = subprocess.run([str(mpicc), "-O2", "-o", str(out), str(SOURCE), "-lm"], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"{mpicc} could not build {SOURCE.name} (no C compiler behind it?): {last}")
    return out


def perfsweep(*args, cwd):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(BIN / "perfsweep"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1200)


def test_ljrate_builds_and_prints_a_time_and_a_rate(tmp_path):
    app = build(tmp_path)
    out = subprocess.run([str(BIN / "mpiexec"), "-n", "2", str(app), "-s", "8", "-steps", "5"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    time = float(out.stdout.split("Loop time: ")[1].split()[0])
    rate = float(out.stdout.split("Performance: ")[1].split()[0])
    assert "on 2 procs for 5 steps with 512 atoms" in out.stdout and rate == pytest.approx(5 / time, rel=1e-3)


@pytest.mark.slow
def test_a_compiled_apps_rate_gets_a_model_that_predicts_beyond_the_grid(tmp_path):
    """7 repetitions of the grid. On this shared host the CPU time of one configuration's
    runs spread by a median 16 % (up to 49 %) between its fastest and slowest over three sweeps, and the
    forms s^3, s^(5/2) log2(s) and s^2 + s^3/p fit the 2x grid alike: bench/compiled_app_draws.py drew
    sweeps from those runs, and s = 24 was missed by more than 15 % in 8 of 60 draws with 3 repetitions
    (the CI run of dded7ff missed it by 16 %), 4 with 5 and 1 with 7 (bench/results/compiled_app_draws).
    s = 24 itself is measured 15 times: with 7, on a host 1.5x slower in CPU time than those sweeps' and
    spreading single runs by about 20 % (CV), its own median moved by about 15 % (p = 2: 0.633 s once,
    0.733 and 0.751 s with 15), and the CI run of 9de1a5d and a run here missed it by 19 and 20 %; with
    15, two runs here missed it by at most 4 %, inside the model's interval, and the clean-clone run of
    5c44367 missed p = 1 by 22 %: its grid's medians strayed about 10 % (s = 14 low, s = 16 high; CV
    10-15 %), and s^(5/2) log2(s)^2 / p, fitted to them, grew 3.45x from 16 to 24 where the runs grew
    2.83x (3.18x on the bench day). So the grid reaches s = 20: s = 24 lies 1.2x beyond it, where the
    forms that fit a 2.5x grid part less than at 1.5x beyond a 2x one."""
    build(tmp_path)
    cfg = json.loads(json.dumps(CONFIG))
    cfg["repetitions"] = 7
    cfg["studies"]["s_p"]["vary"]["s"] = [8, 10, 12, 14, 16, 18, 20]
    cfg["studies"]["s_p"]["validate"]["repetitions"] = 15
    (tmp_path / "ljrate.yaml").write_text(json.dumps(cfg))
    run = perfsweep("run", "ljrate.yaml", "--no-report", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = tmp_path / "results"

    agg = pd.read_csv(results / "tables" / "s_p" / "aggregate.csv")
    rate = agg[agg["metric"] == "timesteps_per_s"]
    assert set(zip(rate["unit"], rate["better"])) == {("steps/s", "higher")}
    assert set(zip(agg.loc[agg["metric"] == "time", "unit"], agg.loc[agg["metric"] == "time", "better"])) == {("s", "lower")}
    assert rate.loc[rate["p"] == 3, "oversubscribed"].all() and not rate.loc[rate["p"] < 3, "oversubscribed"].any()
    at_p1 = rate[(rate["p"] == 1) & ~rate["validation"]].set_index("s")["median"]
    assert at_p1[8] / at_p1[16] > 4, at_p1  # s^3 atoms: the rate falls about 8x over the grid

    table = pd.read_csv(results / "models" / "s_p" / "models.csv").set_index("metric")
    entries = {e["metric"]: e for e in json.loads((results / "models" / "s_p" / "models.json").read_text())}
    row, entry = table.loc["timesteps_per_s"], entries["timesteps_per_s"]
    assert (row["unit"], row["better"], entry["unit"], entry["better"]) == ("steps/s", "higher", "steps/s", "higher")
    assert entry["model"]["reciprocal"] and "s" in str(row["model"]) and row["adj_r2"] > 0.5, row.to_dict()
    assert "oversubscribed" in row["notes"] and "worse than the mean" not in row["notes"], row["notes"]
    assert "steps/s" in (results / "models" / "s_p" / "models.md").read_text()

    checks = pd.read_csv(results / "models" / "s_p" / "validation.csv")
    print(checks[["metric", "s", "p", "measured", "predicted", "rel_error", "covered"]].to_string(index=False))
    beyond = checks[checks["s"] == 24].groupby("metric")["rel_error"].apply(lambda e: e.abs().max())
    assert (beyond <= 0.15).all() and len(beyond) == 2, checks.to_string()

    out = perfsweep("predict", str(results / "models" / "s_p" / "models.json"), "s=24", "p=1,2",
                    "--metric", "timesteps_per_s", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("# all/timesteps_per_s (steps/s, higher is better): 1 / (")
    assert all(" steps/s [" in line for line in lines[-2:]) and lines[-2].startswith("s = 24, p = 1: timesteps_per_s = ")


@pytest.mark.slow
def test_a_slower_build_of_a_compiled_app_is_judged_by_its_time_and_its_rate(tmp_path):
    """Paired measurement (issue 43) of two builds of a user's compiled app: the after build computes the
    forces twice a step (-passes 2). In compare its time row is a regression (ratio about 2, lower is
    better) and so is its rate row (timesteps/s about halved: more is better), the rate with its declared
    unit, and with no share of a total and no impact."""
    build(tmp_path)
    cfg = json.loads(json.dumps(CONFIG))
    cfg["studies"] = {"s_p": {"vary": {"s": [8, 10, 12, 14, 16], "p": [1, 2]}}}
    cfg["variants"] = {"before": {}, "after": {"command": CONFIG["app"]["command"] + " -passes 2"}}
    (tmp_path / "pair.yaml").write_text(json.dumps(cfg))
    run = perfsweep("run", "pair.yaml", "--no-report", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = perfsweep("compare", "results", "--format", "json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    rows = {r["metric"]: r for r in data["rows"]}
    time, rate = rows["time"], rows["timesteps_per_s"]
    assert data["paired"] and time["direction"] == "lower" and time["verdict"] == "regression" and time["ratio"] > 1.5
    assert rate["direction"] == "higher" and rate["verdict"] == "regression" and rate["ratio"] < 0.7, rate
    assert rate["share"] is None and rate["impact"] is None and rate["gated"]
    assert "a rate in steps/s: more is better" in rate["notes"]
    assert any("-passes 2" in d for d in data["differences"]), data["differences"]
