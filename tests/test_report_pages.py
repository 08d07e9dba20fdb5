"""The report's results grouped by study and kind, and its variability page with every run in the order
it ran, on the session's shared ljmd sweep (tests/sweeps/ljmd.py: the real ljmd app with per-rank phases
and nested regions, so every kind of table is filled, through the project's Snakefile and its report
rules, and `perfsweep run`'s report). Elsewhere on the same sweep: the report opened in headless Chromium
(every figure decodes, each model on its study's sheet, every table page parses with the CSV's rows) in
tests/test_report.py, one load for both; each model's figures, drawn with their data for the zip report
by the documented command, in tests/test_docs_commands.py."""

import pandas as pd
import pytest

from perfsweep.report_check import report_categories

pytestmark = pytest.mark.slow

STUDIES = ("T_n_m", "T_n_p", "T_n_m_c")


def test_report_groups_results_by_study_and_kind(ljmd_sweep):
    results = ljmd_sweep.results
    # the report names its files as perfsweep run gave them: relative to the sweep's work directory
    cats = {study: {kind: [str(ljmd_sweep.work / p) for p in paths] for kind, paths in kinds.items()}
            for study, kinds in report_categories(results / "report.html").items()}
    assert set(cats) == {*STUDIES, "all studies"}
    for study in ("T_n_m", "T_n_m_c"):
        assert set(cats[study]) == {"measurements", "variability", "models"}
    assert set(cats["T_n_p"]) == {"measurements", "variability", "models", "scaling", "efficiency"}
    assert cats["all studies"] == {"models": [str(results / "report" / "models_summary.html")]}
    assert str(results / "figures" / "T_n_p" / "model_sheet.png") in cats["T_n_p"]["models"]
    # the variability page: each configuration's host load and every run in the order it ran
    page = (results / "report" / "T_n_m" / "variability.html").read_text()
    assert "The runs in the order they ran" in page and "order_position" in page and "others_busy_share" in page
    order = pd.read_csv(results / "tables" / "T_n_m" / "run_order.csv")
    assert len(order) == 18 and list(order["order_round"]) == [0] * 9 + [1] * 9
    # a round's places are shared by the three studies' configurations: 9 + 12 + 9
    places = len(list(results.glob("runs/*/*/rep0.json")))
    assert places == 30
    for _, rnd in order.groupby("order_round"):  # in order
        assert rnd["order_position"].is_monotonic_increasing and rnd["order_position"].between(0, places - 1).all()
    assert set(order["order_seed"]) == {1}
    assert order["others_busy_share"].between(0, 1).all() and order["cpu_wall_ratio"].gt(0).all()
