"""Validation points in real sweeps (the real Snakemake and ``perfsweep run``, counting benchmark runs as
tests/test_designs_incremental.py does): planned, measured, never fitted or used as design points,
reported (that adding one measures only it: tests/test_designs_incremental.py). And oversubscription
recognised from the run records (real MPI ranks of the built-in ljmd under a CPU affinity of one core)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import BIN, REPO
from test_designs_incremental import APP, PERFSWEEP, runs_in

pytestmark = pytest.mark.slow


def write_config(path, results, design, validate, k=1):
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{n}} {{m}}"},
        "parameters": {"n": 1, "m": 1},
        "studies": {"nm": {"vary": {"n": [1, 2, 3], "m": [1, 2, 3]}, "design": design, "validate": validate}},
        "repetitions": k,
        "results": str(results),
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def test_validation_points_are_planned_measured_never_fitted_and_reported(adaptive_validation_sweep, tmp_path):
    """An adaptive study (k = 2) with one validation point (3 repetitions), by perfsweep run: the plan counts it,
    the first round measures it beside the design's points, the round's fit and the points it adds
    leave it out, and the models table, predictions, models.json, the report and predict show it.
    The sweep is the shared adaptive_validation_sweep (tests/sweeps/tiny.py); the plan is of its config
    before any run."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(adaptive_validation_sweep.config_file.read_text())
    plan = subprocess.run([str(PERFSWEEP), "plan", str(cfg)], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "  nm validation: 1 point beyond the grid (measured, never fitted); 3 runs (0 measured)" in plan.stdout
    assert "total: 6 configurations, 13 runs (0 measured)" in plan.stdout  # 5 design points x 2 + 1 x 3
    results = adaptive_validation_sweep.results
    first, _, second = adaptive_validation_sweep.stdout.partition("perfsweep: round 2 ")
    assert runs_in(first) == 13 and runs_in(second) == 4  # the round adds 2 design points, 2 runs each
    state = json.loads((results / "plan" / "nm" / "points.json").read_text())
    assert "n=6_m=2" not in state["rounds"][0]["fitted"] and len(state["rounds"][0]["fitted"]) == 5
    assert "n=6_m=2" not in state["points"] and len(state["points"]) == 2

    runs = pd.read_csv(results / "tables" / "nm" / "runs.csv")
    assert len(runs) == 17 and set(runs.loc[runs["validation"], "config_id"]) == {"n=6_m=2"}
    assert runs["validation"].sum() == 3
    agg = pd.read_csv(results / "tables" / "nm" / "aggregate.csv")
    time = agg[(agg["region"] == "all") & (agg["metric"] == "time")]
    assert list(time.loc[time["validation"], "config_id"]) == ["n=6_m=2"] and len(time) == 8
    assert not time["oversubscribed"].any()  # one process

    table = pd.read_csv(results / "models" / "nm" / "models.csv")
    row = table[(table["region"] == "all") & (table["metric"] == "time")].iloc[0]
    assert row["n_points"] == 7 and row["validation_points"] == 1  # 5 + 2 design points fitted
    preds = pd.read_csv(results / "models" / "nm" / "predictions.csv")
    preds = preds[(preds["region"] == "all") & (preds["metric"] == "time")]
    assert len(preds) == 8 and list(preds.loc[preds["validation"], "config_id"]) == ["n=6_m=2"]
    val = preds[preds["validation"]].iloc[0]
    measured = time.loc[time["validation"], "median"].iloc[0]
    assert val["measured"] == pytest.approx(measured)
    assert bool(val["covered"]) == (val["low"] <= measured <= val["high"])
    assert row["validation_median_error"] == pytest.approx(abs(val["predicted"] - measured) / measured)
    assert row["validation_coverage"] == float(val["covered"]) and val["low"] < val["predicted"] < val["high"]

    entry = next(e for e in json.loads((results / "models" / "nm" / "models.json").read_text())
                 if e["region"] == "all" and e["metric"] == "time")
    assert entry["validation"] == [{"parameters": {"n": 6.0, "m": 2.0}, "measured": pytest.approx(measured),
                                    "predicted": pytest.approx(val["predicted"]), "low": pytest.approx(val["low"]),
                                    "high": pytest.approx(val["high"]), "covered": bool(val["covered"])}]
    summary = pd.read_csv(results / "tables" / "models_summary.csv")
    assert summary["validation points"].tolist() == [1]
    page = (results / "report" / "nm" / "models.html").read_text()
    assert "Validation points (measured, never fitted)" in page and "n=6_m=2" in page
    assert (results / "report.html").exists()

    pred = subprocess.run([str(PERFSWEEP), "predict", str(results / "models" / "nm" / "models.json"), "n=10", "m=1"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    checks = [line for line in pred if line.startswith("# validation")]  # after the model's form and notes
    assert len(checks) == 1 and checks[0].startswith(f"# validation n = 6, m = 2: time measured {measured:.4g} s, "
                                                     f"predicted {val['predicted']:.4g} s [")
    assert f"] (90 %): {'covered' if val['covered'] else 'not covered'}, error " in checks[0]
    assert pred[pred.index(checks[0]) + 1].startswith("n = 10, m = 1: t = ")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs for a run of 2 ranks that is not oversubscribed")
def test_oversubscription_is_recognised_from_the_records(tmp_path):
    """Real ljmd runs of 1 and 2 ranks (one n: the ranks are what differs): under an affinity of one CPU the records say 1 core and p = 2
    is oversubscribed, p = 1 not; with two CPUs neither is."""
    def sweep(name, cpus):
        results = tmp_path / name
        cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
               "repetitions": 1, "results": str(results),
               "studies": {"np": {"vary": {"p": [1, 2]}}}}  # (a second n adds runs, not cases)
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
        cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), str(results / "tables" / "np" / "aggregate.csv"),
               "--cores", "1", "--configfile", str(tmp_path / f"{name}.yaml")]
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                              preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs = pd.read_csv(results / "tables" / "np" / "runs.csv")
        agg = pd.read_csv(results / "tables" / "np" / "aggregate.csv")
        time = agg[(agg["region"] == "all") & (agg["metric"] == "time")]
        return runs, dict(zip(time["config_id"], time["oversubscribed"]))

    one = sorted(os.sched_getaffinity(0))[:1]
    runs, over = sweep("one", set(one))
    assert (runs["cores"] == 1).all() and (runs["status"] == "ok").all()
    assert over == {"p=1": False, "p=2": True}
    runs, over = sweep("two", set(sorted(os.sched_getaffinity(0))[:2]))
    assert (runs["cores"] == 2).all() and not any(over.values()) and len(over) == 2
