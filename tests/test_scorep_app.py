"""An external app instrumented with Score-P: its call paths become regions of the run records and get
models, like the built-in apps' regions (app.profile; perfsweep.apps.scorep)."""

import json
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.modeling import Model
from perfsweep.sweep.run import execute
from perfsweep.sweep.spec import RunSpec
from sweeps.own_app import TEMPLATE, scorep_config

CALLPATHS = {"main", "main->init_mat", "main->zero_mat", "main->mat_mul"}


def config(tmp_path, **app):
    """The Score-P stand-in's study mm, as the shared sweep own_apps_bundled runs it (tests/sweeps/own_app.py)."""
    return {**scorep_config(**app), "results": str(tmp_path / "results")}


def test_a_run_records_every_call_path_and_metric(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep = load_config(config(tmp_path), "c.yaml")
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[2], 1)
    assert spec.profile == "scorep/mm/n=16/rep1" and RunSpec.from_json(spec.to_json(), spec.timeout) == spec
    without = RunSpec.build(load_config({**config(tmp_path), "app": {"command": "app {n}"}}, "c.yaml"),
                            sweep.studies[0].configurations()[2], 1)
    assert "profile" not in json.loads(without.to_json())  # the spec text of other apps is unchanged
    rec = execute(spec, tmp_path / "rec.json")
    assert rec["status"] == "ok", rec["error"]
    assert rec["profile"] == "scorep/mm/n=16/rep1/profile.cubex"
    (rank,) = rec["ranks"]
    assert set(rank["regions"]) == CALLPATHS
    mm = rank["regions"]["main->mat_mul"]
    assert mm["time"] == pytest.approx(1e-5 * 16 ** 2) and mm["visits"] == 16 ** 2
    assert {"min_time", "max_time", "PAPI_FP_OPS", "PAPI_L2_TCM"} <= set(mm)


def test_every_metric_of_every_call_path_is_modelled(tmp_path, monkeypatch):
    """The run records of a sweep through the tables and the models stage (without Snakemake; the
    slow test below runs the whole pipeline): visits and the profile's counters get models too."""
    from perfsweep import tables
    from perfsweep.modeling.pipeline import fit_study_models

    monkeypatch.chdir(tmp_path)
    sweep = load_config(config(tmp_path), "c.yaml")
    paths = []
    for cfg in sweep.studies[0].configurations():
        paths.append(tmp_path / f"{cfg.config_id}.json")
        assert execute(RunSpec.build(sweep, cfg, 0), paths[-1])["status"] == "ok"
    runs, ranks, regions = tables.collect(map(str, paths))
    var = tables.variability(runs, ["n"], 0.1)
    agg = tables.aggregate(runs, ranks, regions, ["n"], var, "keep-flagged")
    metrics = {"time", "visits", "min_time", "max_time", "PAPI_FP_OPS", "PAPI_L3_TCM", "PAPI_L2_TCM"}
    for callpath in CALLPATHS:
        assert set(agg[agg["region"] == callpath]["metric"]) == metrics, callpath
    table, models, _ = fit_study_models(agg, "mm", ["n"], {}, bootstrap=0)
    assert table["model"].notna().all() and (table["reason"] == "").all()
    by = {(e["region"], e["metric"]): Model.from_dict(e["model"]) for e in models}
    n = np.array([[256.0], [1024.0]])
    visits = {"main": lambda n: 1 + 0 * n, "main->init_mat": lambda n: n, "main->zero_mat": lambda n: 2 * n,
              "main->mat_mul": lambda n: n * n}
    for callpath, f in visits.items():
        model = by[callpath, "visits"]
        assert model.predict(n) == pytest.approx(f(n[:, 0]), rel=1e-6), (callpath, str(model))
    assert str(by["main->zero_mat", "PAPI_FP_OPS"]) == "0"  # a count of all zeros is the model 0


def test_missing_or_stale_profile_fails_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep = load_config(config(tmp_path, command=f"{sys.executable} -c pass --n {{n}}"), "c.yaml")
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[0], 0)
    rec = execute(spec, tmp_path / "rec.json")
    assert rec["status"] == "failed" and "Score-P profile scorep/mm/n=4/rep0 not found" in rec["error"]
    stale = tmp_path / "scorep" / "mm" / "n=4" / "rep0"
    stale.mkdir(parents=True)
    (stale / "profile.cubex").write_bytes(TEMPLATE.read_bytes())
    import os
    os.utime(stale / "profile.cubex", (1e9, 1e9))
    rec = execute(spec, tmp_path / "rec.json")
    assert rec["status"] == "failed" and "older than the run" in rec["error"]
    assert (stale / "profile.cubex").exists()  # nothing deleted


@pytest.mark.parametrize("app, message", [
    ({"profile": "scorep/{nn}"}, "app.profile: 'scorep/{nn}': unknown placeholder {nn}"),
    ({"profile": ""}, "app.profile: empty path"),
    ({"profile": "scorep/{n"}, "app.profile: 'scorep/{n':"),
])
def test_bad_profile_template_is_one_line(tmp_path, app, message):
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_config(config(tmp_path, **app), "c.yaml")


def test_profile_is_for_external_apps(tmp_path):
    cfg = {"app": {"name": "ljmd", "profile": "x"}, "parameters": {"n": 10, "m": 1, "d": 0.5, "c": 2.0},
           "studies": {"s": {"vary": {"n": [10, 20]}}}}
    with pytest.raises(ConfigError, match="app.profile: only for your own app"):
        load_config(cfg, "c.yaml")


@pytest.mark.slow
def test_sweep_models_every_call_path(own_apps_bundled):
    """Study mm of the shared sweep own_apps_bundled (tests/sweeps/own_app.py; its repetitions bundled,
    which leaves the records as without bundles): the whole pipeline from the runs to the models."""
    results = own_apps_bundled.results
    runs = sorted((results / "runs" / "mm").glob("*/rep*.json"))
    assert len(runs) == 12
    assert all(json.loads(p.read_text())["status"] == "ok" for p in runs)
    regions = pd.read_csv(results / "tables" / "mm" / "regions.csv")
    assert set(regions["region"]) == CALLPATHS and len(regions) == 12 * 4
    table = pd.read_csv(results / "models" / "mm" / "models.csv")
    assert set(table["region"]) == {"all", *CALLPATHS} and table["reason"].isna().all()
    # every metric of every call path gets a model (the profile's counters besides the time)
    metrics = {"time", "visits", "min_time", "max_time", "PAPI_FP_OPS", "PAPI_L3_TCM", "PAPI_L2_TCM"}
    for callpath in CALLPATHS:
        assert set(table[table["region"] == callpath]["metric"]) == metrics, callpath
    assert table["model"].notna().all()
    models = {(e["region"], e["metric"]): Model.from_dict(e["model"])
              for e in json.loads((results / "models" / "mm" / "models.json").read_text())}
    # the stand-in's exclusive times and visits; only the right form extrapolates 2 and 8 times beyond n = 128
    truth = {("main", "time"): lambda n: 0.05 + 0 * n, ("main->init_mat", "time"): lambda n: 2e-3 * n,
             ("main->zero_mat", "time"): lambda n: 1e-3 * n * np.log2(n),
             ("main->mat_mul", "time"): lambda n: 1e-5 * n * n,
             ("main", "visits"): lambda n: 1 + 0 * n, ("main->init_mat", "visits"): lambda n: n,
             ("main->zero_mat", "visits"): lambda n: 2 * n, ("main->mat_mul", "visits"): lambda n: n * n}
    n = np.array([256.0, 1024.0])
    for key, f in truth.items():
        assert models[key].predict(n[:, None]) == pytest.approx(f(n), rel=1e-6), (key, str(models[key]))
    # the template's counters do not depend on n: constant models (all zeros: the model 0)
    fp = pd.read_csv(results / "tables" / "mm" / "aggregate.csv")
    fp = fp[(fp["region"] == "main->zero_mat") & (fp["metric"] == "PAPI_FP_OPS")]
    assert len(fp) == 6 and (fp["median"] == 0).all() and str(models["main->zero_mat", "PAPI_FP_OPS"]) == "0"


def test_ranks_and_threads_of_a_profile():
    """Extra-P's threaded example: 2 processes x 2 threads; per rank, time is the maximum over its
    threads and visits the sum."""
    from perfsweep.cube import profile_regions, read_profile

    path = REPO / "tests" / "data" / "extrap" / "cubeset" / "simple_threaded" / "example.f1" / "cube-example1.cubex"
    values, ranks, _ = read_profile(path)
    assert ranks == [0, 0, 1, 1]
    omp = values["main->omp parallel", "time"]
    regions = {r["rank"]: r["regions"] for r in profile_regions(path)}
    assert set(regions) == {0, 1}
    assert regions[0]["main->omp parallel"]["time"] == max(omp[:2])
    assert regions[1]["main->omp parallel"]["time"] == max(omp[2:])
    assert regions[0]["main->omp parallel"]["visits"] == sum(values["main->omp parallel", "visits"][:2])


@pytest.mark.slow
def test_bundled_repetitions_write_a_profile_each(own_apps_bundled):
    """With bundle: repetitions the k runs of a configuration share one job; each keeps its own
    profile (until 2026-11-26 every repetition of a bundle was given repetition 0's). Study mm of the
    shared sweep own_apps_bundled (tests/sweeps/own_app.py), which runs with bundle: repetitions."""
    assert own_apps_bundled.config["bundle"] == "repetitions"
    for n in (4, 8, 16, 32, 64, 128):
        runs = own_apps_bundled.results / "runs" / "mm" / f"n={n}"
        for k in range(2):
            rec = json.loads((runs / f"rep{k}.json").read_text())
            assert rec["status"] == "ok", rec["error"]
            assert rec["profile"] == f"scorep/mm/n={n}/rep{k}/profile.cubex"
            assert (own_apps_bundled.work / rec["profile"]).is_file()
