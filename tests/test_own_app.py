"""The own-application example of docs/how-to/own-app.md, run as written with a stand-in app (tests/apps/loop_time_app.py),
and `perfsweep validate --sample-output` on a matching and a mismatching output."""

import json
import re

import pandas as pd
import pytest

from conftest import REPO
from sweeps.own_app import LOOP_APP as APP, user_perfsweep as perfsweep, write_user_dir


@pytest.fixture
def user_dir(tmp_path):
    """A user's directory: ./my_app (the stand-in), my_app.yaml and sample.txt from docs/how-to/own-app.md."""
    return write_user_dir(tmp_path)


def test_sample_output_match_and_mismatch(user_dir):
    ok = perfsweep("validate", "my_app.yaml", "--sample-output", "sample.txt", cwd=user_dir)
    assert ok.returncode == 0, ok.stderr
    assert "time: 0.0172388" in ok.stdout and "steps_per_s: 5801" in ok.stdout
    assert "every pattern matches" in ok.stdout and ok.stderr == ""

    (user_dir / "other.txt").write_text("Loop time: 1.5 s\nPerformance: 10 steps/s\n")
    bad = perfsweep("validate", "my_app.yaml", "--sample-output", "other.txt", cwd=user_dir)
    assert bad.returncode == 1
    assert "time: NO MATCH: not found on stdout" in bad.stdout and "steps_per_s: 10" in bad.stdout
    assert bad.stderr.strip() == (
        "perfsweep: my_app.yaml: app.time_pattern (Loop time of ([0-9.eE+-]+) on): not found on stdout "
        "(other.txt): every run with such output would fail")
    assert "Traceback" not in bad.stdout + bad.stderr

    missing = perfsweep("validate", "my_app.yaml", "--sample-output", "nope.txt", cwd=user_dir)
    assert missing.returncode == 2 and missing.stderr.startswith("perfsweep: nope.txt: cannot read")


def test_sample_output_of_a_builtin_app_is_refused(tmp_path):
    out = perfsweep("validate", str(REPO / "config" / "config.yaml"), "--sample-output", str(APP), cwd=tmp_path)
    assert out.returncode == 2 and "no study runs an external app" in out.stderr


@pytest.mark.slow
def test_readme_own_app_example_runs_as_written(own_app_doc_sweep):
    """The shared sweep of the doc's my_app.yaml, run as written (tests/sweeps/own_app.py: its exit code 0
    is asserted there)."""
    results = own_app_doc_sweep.results
    records = [json.loads(f.read_text()) for f in (results / "runs" / "atoms_p").glob("*/rep*.json")]
    assert len(records) == 5 * 3 * 3 and all(r["status"] == "ok" for r in records)
    for r in records:  # the time is the app's own loop time, read from its output, not the launch's wall time
        printed = re.search(r"Loop time of ([0-9.eE+-]+) on (\d+) procs", r["stdout_tail"])
        assert r["time"] == float(printed.group(1)) and int(printed.group(2)) == r["parameters"]["p"]
        assert r["time"] < r["wall_time"] and r["metrics"]["steps_per_s"] > 0
    models = pd.read_csv(results / "models" / "atoms_p" / "models.csv")
    assert set(models["metric"]) == {"time", "steps_per_s"} and models["model"].notna().all()
    assert (results / "report.html").stat().st_size > 0


@pytest.mark.slow
def test_four_parameter_sparse_study_of_an_own_app_gets_its_figures(own_apps_bundled):
    """A study varying four parameters (study abcd of the shared bundled own-app sweep,
    tests/sweeps/own_app.py): the run-time model's figure shows three and holds the fourth at its middle
    measured value (the figures stage failed on such studies until 2026-11-25)."""
    figures = own_apps_bundled.results / "figures" / "abcd"
    shown = pd.read_csv(figures / "model.csv")
    assert list(shown.columns) == ["a", "b", "c", "model_time"]
    # the model (exact data: 0.01 + 0.001 a b c d) drawn at d = 2, the middle measured value
    assert abs(shown["model_time"] - (0.01 + 0.002 * shown["a"] * shown["b"] * shown["c"])).max() < 1e-6
    assert (figures / "model.png").stat().st_size > 0
