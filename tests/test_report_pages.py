"""The report's model figures (one sheet of every model per study) and table pages, end to end: a real
(tiny) sweep of the ljmd app (per-rank phases and nested regions, so every kind of table is filled)
through the project's Snakefile plus workflow/rules/report.smk, `snakemake --report`, and the report
opened in headless Chromium: every figure decodes (each model: on its study's sheet), every table page
parses with the CSV's rows, and the results are grouped by study and kind."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_plots import assert_figure

from perfsweep.report_check import check_report, check_report_tables, chromium, report_categories, unshown_figures

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"


def snakemake(*args, cwd):
    proc = subprocess.run([str(SNAKEMAKE), "-s", "Snakefile", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    snakefile = f'include: "{REPO / "Snakefile"}"\n'
    if "report.smk" not in (REPO / "Snakefile").read_text():  # until the Snakefile includes it itself
        snakefile += f'include: "{REPO / "workflow" / "rules" / "report.smk"}"\n'
    snakefile += "\nrule with_report:\n    input: get_final_outputs, get_all_report_outputs()\n"
    (tmp / "Snakefile").write_text(snakefile)
    cfg = {
        "app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
        "repetitions": 2,
        "studies": {"nm": {"vary": {"n": [100, 200, 300], "m": [1, 2, 3]}},
                    "np": {"vary": {"n": [100, 200, 300], "p": [1, 2, 3, 4]}, "fixed": {"m": 2}}},
        "results": str(tmp / "results"),
    }
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake("with_report", "--cores", "2", "--configfile", "c.yaml", cwd=tmp)
    snakemake("--configfile", "c.yaml", "--report", tmp / "results" / "report.html", cwd=tmp)
    return tmp / "results"


def test_every_model_has_its_figures_with_data(sweep):
    # each model's figures: drawn only for a zip report (test_report.py), here by the rule's stage
    from perfsweep.stages import model_figures

    assert not list(sweep.glob("figures/*/models"))
    for study in ("nm", "np"):
        model_figures.run(sweep / "models" / study / "models.json", sweep / "models" / study / "predictions.csv",
                          study, figures=sweep / "figures" / study / "models")
    for study in ("nm", "np"):
        # dtype: a constant model ("0.000276") would otherwise be read as a number
        models = pd.read_csv(sweep / "models" / study / "models.csv", dtype={"model": str})
        fitted = models[models["model"].fillna("").str.len() > 0]
        assert {"all", "step/forces"} <= set(fitted["region"])  # ljmd's nested regions are modeled too
        for metric, region in zip(fitted["metric"], fitted["region"]):
            for suffix in ("", "__vs_measurement"):
                png = sweep / "figures" / study / "models" / f"{metric}__{region.replace('/', '-')}{suffix}.png"
                assert len(assert_figure(png)) > 0, png  # decodes, shows something, its CSV has the data


def test_report_groups_results_by_study_and_kind(sweep):
    cats = report_categories(sweep / "report.html")
    assert set(cats) == {"nm", "np", "all studies"}
    assert set(cats["nm"]) == {"measurements", "variability", "models"}
    assert set(cats["np"]) == {"measurements", "variability", "models", "scaling", "efficiency"}
    assert cats["all studies"] == {"models": [str(sweep / "report" / "models_summary.html")]}
    assert str(sweep / "figures" / "np" / "model_sheet.png") in cats["np"]["models"]
    # the variability page: each configuration's host load and every run in the order it ran
    page = (sweep / "report" / "nm" / "variability.html").read_text()
    assert "The runs in the order they ran" in page and "order_position" in page and "others_busy_share" in page
    order = pd.read_csv(sweep / "tables" / "nm" / "run_order.csv")
    assert len(order) == 18 and list(order["order_round"]) == [0] * 9 + [1] * 9
    for _, rnd in order.groupby("order_round"):  # in order; the round's places are shared with study np
        assert rnd["order_position"].is_monotonic_increasing and rnd["order_position"].between(0, 20).all()
    assert set(order["order_seed"]) == {1}
    assert order["others_busy_share"].between(0, 1).all() and order["cpu_wall_ratio"].gt(0).all()


def test_report_in_chromium_every_figure_and_table_loads(sweep):
    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (apt-get install chromium; CI installs it)")
    widths = check_report(sweep / "report.html")
    assert unshown_figures(sweep, widths) == []  # each model's figures: on its study's sheet
    assert all(w > 100 for w in widths.values()), widths
    rows = check_report_tables(sweep / "report.html")
    expected = {}
    for study in ("nm", "np"):
        t = sweep / "tables" / study
        expected[f"{study}/variability.html"] = [1, len(pd.read_csv(t / "variability.csv")),  # and the runs
                                                 len(pd.read_csv(t / "run_order.csv"))]  # in their order
        expected[f"{study}/measurements.html"] = [len(pd.read_csv(t / "medians.csv"))]
        expected[f"{study}/models.html"] = [len(pd.read_csv(sweep / "models" / study / "models.csv")),  # and the
                                            len(pd.read_csv(sweep / "models" / study / "validation.csv"))]  # points
    expected["np/scaling.html"] = [len(pd.read_csv(sweep / "metrics" / "np" / "scaling.csv")),
                                   len(pd.read_csv(sweep / "overhead" / "np" / "fits.csv"))]
    expected["np/efficiency.html"] = [len(pd.read_csv(sweep / "metrics" / "np" / "pop.csv"))]
    expected["models_summary.html"] = [len(pd.read_csv(sweep / "tables" / "models_summary.csv"))]
    assert {str(Path(p).relative_to(sweep / "report")): r for p, r in rows.items()} == expected
    assert expected["np/scaling.html"] == [12, 3] and expected["np/efficiency.html"][0] >= 5  # all filled
