"""End to end on the real ljmd app: sweep -> models, overhead, POP -> HTML report, opened in Chromium.
The sweep is the session's shared ljmd sweep (tests/sweeps/ljmd.py: the default config's kinds of study,
two and three varied parameters, and p, at reduced size), so its report has every kind of figure the
default run's has, and must stay small enough to send. The zip report (each model's full-size figures)
is made by the documented command in tests/test_docs_commands.py, on a copy of the same sweep."""

import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import snakemake
from test_plots import assert_figure
from perfsweep.report_check import chromium, probe_report, unshown_figures

pytestmark = pytest.mark.slow

STUDIES = ("T_n_m", "T_n_p", "T_n_m_c")


def test_every_study_output_exists_with_data_beside_figures(ljmd_sweep):
    results = ljmd_sweep.results
    for study in STUDIES:
        for fig in ("time_vs_parameters", "grid", "variability", "model", "model_vs_measurement"):
            assert_figure(results / "figures" / study / f"{fig}.png")  # decodes, shows something, its CSV
        models = pd.read_csv(results / "models" / study / "models.csv", dtype={"model": str})  # "0.012": text
        assert (models[(models.region == "all") & (models.metric == "time")]["model"].str.len() > 0).all()
    for png in ("overhead/T_n_p/overhead.png", "metrics/T_n_p/pop.png", "metrics/T_n_p/speedup_efficiency.png",
                "metrics/T_n_p/ranks.png"):
        assert_figure(results / png)
    pop = pd.read_csv(results / "metrics" / "T_n_p" / "pop.csv", index_col=0)
    assert pop.shape[1] == 12 and any("Load Balance" in i for i in pop.index)  # one column a configuration
    # 3 x 3 configurations x 2 repetitions, each run reported
    assert "perfsweep: study T_n_m measured: 18/18 runs ok" in ljmd_sweep.stdout + ljmd_sweep.stderr


REPORT_LIMIT = 5_000_000  # bytes: small enough to mail or attach


def each_model_figure(results):
    """{study: names of the per-model PNGs in figures/<study>/models/} (full size; not in the HTML report)."""
    return {d.parent.name: sorted(p.name for p in d.glob("*.png")) for d in results.glob("figures/*/models")}


def test_report_is_small_and_opens_in_chromium_with_every_figure_and_table(ljmd_sweep):
    """One Chromium load of the report (probe_report) checks its figures and its table pages."""
    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (apt-get install chromium; CI installs it)")
    results = ljmd_sweep.results
    assert (results / "report.html").stat().st_size <= REPORT_LIMIT
    probed = probe_report(results / "report.html")
    # the report names its files as perfsweep run gave them: relative to the sweep's work directory
    loaded = {str(ljmd_sweep.work / p): width for p, width in probed["images"].items()}
    assert unshown_figures(results, loaded) == []  # each model: on its study's sheet, which decodes
    assert all(width > 100 for width in loaded.values()), loaded
    assert not [p for p in loaded if Path(p).parent.name == "models"]  # full-size ones: in the zip report
    # the sheets list every fitted model of their study
    for study in STUDIES:
        sheet = pd.read_csv(results / "figures" / study / "model_sheet.csv")
        models = pd.read_csv(results / "models" / study / "models.csv", dtype={"model": str})
        fitted = models[models["model"].fillna("").str.len() > 0]
        assert sorted(zip(sheet["metric"], sheet["region"])) == sorted(zip(fitted["metric"], fitted["region"]))
    # every table page parses in the browser with its CSVs' rows
    expected = {}
    for study in STUDIES:
        t = results / "tables" / study
        expected[f"{study}/variability.html"] = [1, len(pd.read_csv(t / "variability.csv")),  # and the runs
                                                 len(pd.read_csv(t / "run_order.csv"))]  # in their order
        expected[f"{study}/measurements.html"] = [len(pd.read_csv(t / "medians.csv"))]
        expected[f"{study}/models.html"] = [len(pd.read_csv(results / "models" / study / "models.csv")),  # and
                                            len(pd.read_csv(results / "models" / study / "validation.csv"))]  # points
    expected["T_n_p/scaling.html"] = [len(pd.read_csv(results / "metrics" / "T_n_p" / "scaling.csv")),
                                      len(pd.read_csv(results / "overhead" / "T_n_p" / "fits.csv"))]
    expected["T_n_p/efficiency.html"] = [len(pd.read_csv(results / "metrics" / "T_n_p" / "pop.csv"))]
    expected["models_summary.html"] = [len(pd.read_csv(results / "tables" / "models_summary.csv"))]
    rows = {str(ljmd_sweep.work / p): r for p, r in probed["pages"].items()}
    assert {str(Path(p).relative_to(results / "report")): r for p, r in rows.items()} == expected
    # all filled: 12 configurations of T_n_p, an overhead fit for each of its 3 n; the POP table's rows
    assert expected["T_n_p/scaling.html"] == [12, 3] and expected["T_n_p/efficiency.html"][0] >= 5


def test_zip_report_asks_for_a_run_to_draw_each_model_figure_first(ljmd_sweep):
    """Each model's full-size figures are drawn only for a zip report; asked for one without a run,
    Snakemake stops at once (before any job: the shared tree is unchanged) and names the option that
    draws them. The zip itself: tests/test_docs_commands.py, by the documented command on a copy."""
    results, work = ljmd_sweep.results, ljmd_sweep.work
    assert each_model_figure(results) == {}  # drawn only for a zip report, which asks for them first:
    unready = snakemake("--configfile", work / "c.yaml", "--report", work / "report.zip", cwd=work, check=False)
    assert unready.returncode != 0 and "add --report-after-run" in unready.stderr and "Traceback" not in unready.stderr
    assert each_model_figure(results) == {} and not (work / "report.zip").exists()
