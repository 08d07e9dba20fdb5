"""End to end on the real ljmd app: sweep -> models, overhead, POP -> HTML report, opened in Chromium."""

import os

import pandas as pd
import pytest
import yaml

from conftest import snakemake
from perfsweep.report_check import check_report, chromium

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    cfg = {
        "app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
        "repetitions": 2,
        "studies": {
            "nm": {"vary": {"n": [100, 150, 200, 250, 300], "m": [1, 2, 3, 4, 5]}},
            "np": {"vary": {"n": [150, 225, 300], "p": [1, 2, 3, 4]}, "fixed": {"m": 2}},
        },
        "results": str(tmp / "results"),
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = snakemake("--cores", "2", "--configfile", tmp / "c.yaml", cwd=tmp)
    snakemake("--configfile", tmp / "c.yaml", "--report", tmp / "results" / "report.html", cwd=tmp)
    return tmp / "results", proc


def test_every_study_output_exists_with_data_beside_figures(sweep):
    results, proc = sweep
    for study in ("nm", "np"):
        for fig in ("time_vs_parameters", "grid", "variability", "model", "model_vs_measurement"):
            png = results / "figures" / study / f"{fig}.png"
            assert png.stat().st_size > 10_000, png
            assert png.with_suffix(".csv").exists(), png
        models = pd.read_csv(results / "models" / study / "models.csv")
        assert (models[(models.region == "all") & (models.metric == "time")]["model"].str.len() > 0).all()
    for png in ("overhead/np/overhead.png", "metrics/np/pop.png", "metrics/np/speedup_efficiency.png",
                "metrics/np/ranks.png"):
        assert (results / png).stat().st_size > 10_000 and (results / png).with_suffix(".csv").exists()
    pop = pd.read_csv(results / "metrics" / "np" / "pop.csv", index_col=0)
    assert pop.shape[1] == 12 and any("Load Balance" in i for i in pop.index)
    assert "perfsweep: study nm measured: 50/50 runs ok" in proc.stdout + proc.stderr


def test_report_opens_in_chromium_with_every_figure(sweep):
    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (apt-get install chromium; CI installs it)")
    results, _ = sweep
    loaded = check_report(results / "report.html")
    figures = sorted(str(p) for p in results.rglob("*.png"))
    assert sorted(loaded) == figures
    assert all(width > 100 for width in loaded.values()), loaded
