"""Figure functions (seed 001 Figs. 4, 6, 7, Table 1 as a figure), the report's model figures and sheet and
table pages: each PNG decodes and is not blank, and the CSV beside it holds exactly what was plotted."""

import itertools
import json
import os
from html.parser import HTMLParser

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from perfsweep import report
from perfsweep.modeling.pipeline import fit_study_models
from perfsweep.plots import models as mp
from perfsweep.plots.grid import SIZE_MIN, SIZE_RANGE, measured_grid
from perfsweep.plots.variability import variability_figure


def assert_figure(png):
    """The PNG decodes, is of a readable size and shows something (not one flat colour)."""
    img = matplotlib.image.imread(png)
    assert img.shape[0] > 200 and img.shape[1] > 300, img.shape
    assert img[..., :3].std() > 0.02
    return pd.read_csv(png.with_suffix(".csv"))


def f2(x):
    return 0.5 + 0.01 * x[:, 0] * np.log2(x[:, 0]) / x[:, 1]


def grid_points(**values):
    names = list(values)
    return pd.DataFrame(list(itertools.product(*values.values())), columns=names)


def test_contour_covers_the_measured_range_with_the_model_values(tmp_path):
    pts = grid_points(n=[100, 200, 400, 800], p=[1, 2, 4, 8])
    data = mp.contour(f2, ["n", "p"], pts, "0.5 + 0.01 * n * log2(n) * p^-1", 0.99, tmp_path / "c.png", "T(n, p)")
    on_disk = assert_figure(tmp_path / "c.png")
    pd.testing.assert_frame_equal(on_disk, data, check_dtype=False)
    assert (data["n"].min(), data["n"].max(), data["p"].min(), data["p"].max()) == (100, 800, 1, 8)
    np.testing.assert_allclose(data["model_time"], f2(data[["n", "p"]].to_numpy()))


def test_slices_one_filled_slice_per_measured_value_of_the_third_parameter(tmp_path):
    pts = grid_points(n=[1, 2, 3], m=[1, 2, 3, 4], c=[1.5, 2.0, 2.5])

    def f3(x):
        return x[:, 0] * x[:, 1] ** 2 * x[:, 2] ** 3

    data = mp.slices(f3, ["n", "m", "c"], pts, "n * m^2 * c^3", 0.9, tmp_path / "s.png", "T(n, m, c)")
    assert_figure(tmp_path / "s.png")
    assert sorted(data["c"].unique()) == [1.5, 2.0, 2.5]
    assert data.groupby("c").size().nunique() == 1  # every slice is the same full n x m grid
    np.testing.assert_allclose(data["model_time"], f3(data[["n", "m", "c"]].to_numpy()))


def test_hold_fixes_the_parameters_not_shown():
    def f4(x):
        return x[:, 0] + 10 * x[:, 1] + 100 * x[:, 2] + 1000 * x[:, 3]

    g = mp.hold(f4, ["a", "b", "c", "d"], shown=["d", "a", "c"], held={"b": 7})
    np.testing.assert_allclose(g(np.array([[1.0, 2.0, 3.0]])), [1000 + 2 + 300 + 70])
    with pytest.raises(ValueError, match="no value for b"):
        mp.hold(f4, ["a", "b", "c", "d"], shown=["a", "c", "d"], held={})


def test_title_names_formula_and_adjusted_r2_and_wraps_long_formulas():
    formula = " + ".join(f"{i}.5 * n^{i}/4 * log2(m)" for i in range(1, 9))
    title = mp._title("T(n, m)", formula, 0.98765)
    lines = title.split("\n")
    assert lines[0] == "T(n, m)" and lines[-1] == "adj. R² 0.988"
    assert " ".join(lines[1:-1]) == formula and max(map(len, lines)) <= 90


def test_model_vs_measurement_keeps_the_predictions(tmp_path):
    pred = pd.DataFrame({"config_id": ["a", "b", "c"], "measured": [1.0, 2.0, 4.0], "predicted": [1.1, 1.9, 4.0]})
    pred["rel_error"] = (pred["predicted"] - pred["measured"]) / pred["measured"]
    mp.model_vs_measurement(pred, tmp_path / "v.png", "nm")
    pd.testing.assert_frame_equal(assert_figure(tmp_path / "v.png"), pred)


def test_measured_grid_sizes_follow_cv_and_unknown_cv_stays_visible(tmp_path):
    pts = grid_points(n=[1, 2, 3], p=[1, 2])
    med = pts.assign(config_id=[f"c{i}" for i in range(6)], median=np.arange(1.0, 7.0))
    var = pd.DataFrame({"config_id": med["config_id"], "cv": [0.0, 0.05, 0.10, np.nan, 0.2, 0.01]})
    data = measured_grid(med, var, ["n", "p"], "np", tmp_path / "g.png")
    on_disk = assert_figure(tmp_path / "g.png")
    assert list(on_disk.columns) == ["config_id", "n", "p", "median", "cv", "marker_size"]
    np.testing.assert_allclose(data["marker_size"], SIZE_MIN + SIZE_RANGE * np.array([0, 0.25, 0.5, 0, 1, 0.05]))
    # one good repetition per configuration: no CV anywhere, still a visible marker each
    data = measured_grid(med, var.assign(cv=np.nan), ["n"], "n_only", tmp_path / "g1.png")
    assert_figure(tmp_path / "g1.png")
    assert (data["marker_size"] == SIZE_MIN).all()


def test_measured_grid_three_parameters_one_panel_per_third_value(tmp_path):
    pts = grid_points(n=[1, 2], m=[1, 2, 3], c=[1.0, 2.0, 3.0])
    med = pts.assign(config_id=[f"c{i}" for i in range(len(pts))], median=np.linspace(1, 2, len(pts)))
    var = pd.DataFrame({"config_id": med["config_id"], "cv": np.linspace(0, 0.3, len(pts))})
    data = measured_grid(med, var, ["n", "m", "c"], "nmc", tmp_path / "g3.png")
    assert_figure(tmp_path / "g3.png")
    assert len(data) == 18 and data["cv"].max() == pytest.approx(0.3)


def test_variability_figure_sorted_by_cv_with_threshold(tmp_path):
    var = pd.DataFrame({"config_id": ["a", "b", "c"], "cv": [0.02, 0.3, np.nan], "n_ok": [3, 3, 1],
                        "n_runs": [3, 3, 3], "flagged": [False, True, False], "cv_threshold": 0.1})
    data = variability_figure(var, "nm", tmp_path / "var.png")
    assert list(assert_figure(tmp_path / "var.png")["config_id"]) == ["b", "a", "c"]
    assert list(data["flagged"]) == [True, False, False]


def write_study_models(tmp_path):
    """models.json and predictions.csv as the pipeline writes them, from a synthetic aggregate."""
    pts = grid_points(n=[100, 200, 300, 400, 500], m=[1, 2, 3, 4, 5])
    rows = []
    for region, scale in (("all", 1.0), ("step/forces", 0.7)):
        rows.append(pts.assign(region=region, metric="time", median=scale * 1e-4 * pts["n"] * pts["m"] ** 2))
    agg = pd.concat(rows, ignore_index=True)
    agg["config_id"] = [f"n={n}_m={m}" for n, m in zip(agg["n"], agg["m"])]
    _, models, preds = fit_study_models(agg, "nm", ["n", "m"], {"d": 0.5})
    (tmp_path / "models.json").write_text(json.dumps(models))
    preds.to_csv(tmp_path / "predictions.csv", index=False)
    return models


def test_model_figures_one_figure_and_one_comparison_per_model(tmp_path):
    models = write_study_models(tmp_path)
    assert len(models) == 2
    written = mp.model_figures(tmp_path / "models.json", tmp_path / "predictions.csv", tmp_path / "figs", "nm")
    assert sorted(p.name for p in written) == ["time__all.png", "time__all__vs_measurement.png",
                                               "time__step-forces.png", "time__step-forces__vs_measurement.png"]
    contour = assert_figure(tmp_path / "figs" / "time__step-forces.png")
    # the exact model (0.7e-4 n m^2) is found, so its contour values are the function itself
    np.testing.assert_allclose(contour["model_time"], 0.7e-4 * contour["n"] * contour["m"] ** 2, rtol=1e-6)
    vs = assert_figure(tmp_path / "figs" / "time__all__vs_measurement.png")
    assert len(vs) == 25 and np.abs(vs["rel_error"]).max() < 1e-6


def test_model_figure_of_four_parameters_holds_the_fourth_at_a_measured_middle_value(tmp_path):
    from perfsweep.modeling.model import Model

    pts = grid_points(n=[1, 2, 3, 4, 5], m=[1, 2, 3, 4, 5], c=[1, 2, 3], d=[0.2, 0.5, 0.8])
    # T = 1 + 2 n m c d (a model as the engine stores it: one term, a product over the four parameters)
    model = Model.from_dict({"param_names": ["n", "m", "c", "d"], "terms": [[[j, "1", 0] for j in range(4)]],
                             "coefficients": [1.0, 2.0], "adj_r2": 1.0, "points": pts.to_numpy().tolist(),
                             "values": (1 + 2 * pts.prod(axis=1)).tolist()})
    data = mp.model_figure(model, tmp_path / "m4.png", "T(n, m, c, d)")
    assert_figure(tmp_path / "m4.png")
    np.testing.assert_allclose(data["model_time"], 1 + 2 * data["n"] * data["m"] * data["c"] * 0.5)


class _Rows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.classes = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
            self.classes.append(dict(attrs).get("class"))

    def handle_data(self, data):
        if self.rows and data.strip():
            self.rows[-1].append(data.strip())


def test_tables_page_shows_every_row_escaped_and_shades_flagged(tmp_path):
    pd.DataFrame({"config_id": ["a<b", "c"], "cv": [0.123456, np.nan], "flagged": [True, False]}).to_csv(
        tmp_path / "t.csv", index=False)
    report.pages({"variability": tmp_path / "t.csv"}, {"page": tmp_path / "p.html"}, {"page": ["variability"]},
                 study="nm")
    text = (tmp_path / "p.html").read_text()
    assert "a&lt;b" in text and "<title>nm: page</title>" in text
    parser = _Rows()
    parser.feed(text)
    assert parser.rows == [["config_id", "cv", "flagged"], ["a<b", "0.1235", "yes"], ["c", "no"]]
    assert parser.classes == [None, "flagged", None]
    with pytest.raises(KeyError, match="no input"):
        report.pages({}, {"page": tmp_path / "q.html"}, {"page": ["variability"]})


def test_model_slug_is_a_safe_file_name():
    assert mp.model_slug("step/forces", "time") == "time__step-forces"
    assert mp.model_slug("block_rmsd/frames", "comm") == "comm__block_rmsd-frames"
    assert mp.model_slug("", "time") == "time__root"


def test_model_sheet_shows_every_model_on_one_small_palette_png(tmp_path):
    from PIL import Image

    from perfsweep.plots.style import PNG_COLOURS

    models = write_study_models(tmp_path)
    data = mp.model_sheet(tmp_path / "models.json", tmp_path / "predictions.csv", tmp_path / "sheet.png", "nm")
    on_disk = assert_figure(tmp_path / "sheet.png")
    pd.testing.assert_frame_equal(on_disk, data, check_dtype=False)
    assert list(zip(data["metric"], data["region"])) == [(m["metric"], m["region"]) for m in models]
    assert list(data["panel"]) == ["row 1, column 1", "row 1, column 2"]
    assert list(data["figure"]) == ["time__all.png", "time__step-forces.png"]  # as model_figures names them
    assert data["model"].str.contains("n").all() and (data["adj_r2"] > 0.99).all()
    image = Image.open(tmp_path / "sheet.png")
    assert image.mode == "P" and len(image.getcolors()) <= PNG_COLOURS
    assert (tmp_path / "sheet.png").stat().st_size < 100_000


def test_model_sheet_of_a_study_without_models_says_so(tmp_path):
    (tmp_path / "models.json").write_text("[]")
    (tmp_path / "predictions.csv").write_text("")
    data = mp.model_sheet(tmp_path / "models.json", tmp_path / "predictions.csv", tmp_path / "sheet.png", "nm")
    assert len(data) == 0 and (tmp_path / "sheet.png").stat().st_size > 0


@pytest.mark.parametrize("argv, wanted", [(["--report", "r.zip"], True), (["--report=out/r.zip"], True),
                                          (["--report", "r.html"], False), (["--cores", "2", "a.zip"], False)])
def test_zip_report_requested_only_for_a_zip_report(argv, wanted):
    assert report.zip_report_requested(argv) is wanted


def test_unshown_figures_names_what_a_report_does_not_show(tmp_path):
    from perfsweep.report_check import unshown_figures

    study = tmp_path / "figures" / "nm"
    (study / "models").mkdir(parents=True)
    for name in ("grid.png", "model_sheet.png", "models/time__all.png", "models/time__all__vs_measurement.png",
                 "models/comm__all.png"):
        (study / name).write_bytes(b"png")
    pd.DataFrame({"metric": ["time"], "region": ["all"], "figure": ["time__all.png"]}).to_csv(
        study / "model_sheet.csv", index=False)
    shown = {str(study / "grid.png"): 500, str(study / "model_sheet.png"): 800}
    assert unshown_figures(tmp_path, shown) == [str(study / "models" / "comm__all.png")]
    shown[str(study / "model_sheet.png")] = 0  # the sheet did not decode: no model is shown
    assert unshown_figures(tmp_path, shown) == sorted(str(p) for p in study.rglob("*.png") if p.name != "grid.png")


def test_report_categories_of_a_file_that_is_no_snakemake_report_is_one_error(tmp_path):
    from perfsweep.report_check import report_categories

    page = tmp_path / "page.html"
    page.write_text("<html><body>var other = {}</body></html>")
    with pytest.raises(ValueError, match=r"page.html: no 'var categories' in the file \(not a Snakemake report\?\)"):
        report_categories(page)


def test_zip_report_unready_names_the_missing_figures_and_the_flag_that_draws_them(tmp_path):
    dirs = [str(tmp_path / "figures" / s / "models") for s in ("nm", "np")]
    zip_argv = ["--report", "r.zip"]
    said = report.zip_report_unready(zip_argv, dirs)
    assert dirs[0] in said and "(and 1 more)" in said and "--report-after-run" in said
    assert report.zip_report_unready([*zip_argv, "--report-after-run"], dirs) is None  # the run draws them
    assert report.zip_report_unready(["--report", "r.html"], dirs) is None  # an HTML report shows the sheets
    for d in dirs:
        os.makedirs(d)
    assert report.zip_report_unready(zip_argv, dirs) is None
