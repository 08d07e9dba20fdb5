"""perfsweep.stages.call: a rule's keys reach its stage function by name, and a mismatch stops the job
with one line naming the rule, the key and the function."""

import subprocess

import pytest

from conftest import BIN, REPO
from perfsweep.errors import RuleMismatch
from perfsweep.stages import bind, collect, metrics


def test_bind_hands_keys_and_wildcards_by_name():
    keys = {"input": {"runs": "r.csv"}, "output": {"table": "v.csv", "summary": "s.csv"},
            "params": {"varied": ["n"], "cv_threshold": 0.1}}
    from perfsweep.stages import variability

    got = bind("variability", variability.run, keys, {"study": "nm", "config": "ignored"})
    assert got == {"runs": "r.csv", "table": "v.csv", "summary": "s.csv", "varied": ["n"], "cv_threshold": 0.1,
                   "study": "nm"}


def test_bind_names_rule_key_and_function_on_a_mismatch():
    with pytest.raises(RuleMismatch, match=r"^rule metrics: output key 'pop_png' is not a parameter of "
                                           r"perfsweep\.stages\.metrics\.run \(parameters: runs, ranks, regions"):
        bind("metrics", metrics.run, {"output": {"pop_png": "x.png"}})
    with pytest.raises(RuleMismatch, match=r"^rule collect: parameter 'regions' of perfsweep\.stages\.collect\.run "
                                           r"is given by no input, output, params or wildcard key"):
        bind("collect", collect.run, {"params": {"records": []}, "output": {"runs": "a", "ranks": "b"}})
    with pytest.raises(RuleMismatch, match="key 'runs' appears twice"):
        bind("collect", collect.run, {"input": {"runs": "a"}, "output": {"runs": "b"}})


def test_bind_hands_a_part_as_one_mapping_to_a_parameter_of_its_name():
    from perfsweep.stages import report_pages, report_pages_summary

    keys = {"input": {"medians": "m.csv", "models": "models.csv"},
            "output": {"measurements": "m.html", "models": "models.html"},  # a page named like a table
            "params": {"pages": {"measurements": ["medians"], "models": ["models"]}}}
    got = bind("report_pages", report_pages.run, keys, {"study": "nm"})
    assert got == {"input": keys["input"], "output": keys["output"], "pages": keys["params"]["pages"], "study": "nm"}
    assert "study" not in bind("report_pages_summary", report_pages_summary.run, keys)  # no wildcard: run's default
    with pytest.raises(RuleMismatch, match=r"^rule report_pages: params key 'layout' is not a parameter of "
                                           r"perfsweep\.stages\.report_pages\.run"):
        bind("report_pages", report_pages.run, {**keys, "params": {"layout": {}}})
    with pytest.raises(RuleMismatch, match=r"parameter 'pages' of perfsweep\.stages\.report_pages\.run is given by no"):
        bind("report_pages", report_pages.run, {"input": {}, "output": {}})


def test_report_pages_writes_one_page_per_output(tmp_path):
    from perfsweep.stages import report_pages

    (tmp_path / "m.csv").write_text("config_id,median\nn=1,0.5\n")
    written = report_pages.run({"medians": tmp_path / "m.csv"}, {"measurements": tmp_path / "m.html"},
                               {"measurements": ["medians"]}, study="nm")
    assert written == [tmp_path / "m.html"]
    page = (tmp_path / "m.html").read_text()
    assert "<title>nm: measurements</title>" in page and "<td class=\"text\">n=1</td><td class=\"\">0.5</td>" in page


@pytest.mark.slow
def test_a_real_job_with_a_mismatched_key_fails_before_running(tmp_path):
    """A Snakefile of its own (one rule, no sweep): the mismatched key of its rule is what it tests, and
    no rule of the project's workflow has one."""
    (tmp_path / "Snakefile").write_text(f'''
rule bad:
    output:
        table="out.csv",
    params:
        records=[],
    log:
        "bad.log",
    script:
        "{REPO}/scripts/collect.py"
''')
    proc = subprocess.run([BIN / "snakemake", "--cores", "1"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode != 0
    log = (tmp_path / "bad.log").read_text()
    assert "RuleMismatch: rule bad: output key 'table' is not a parameter of perfsweep.stages.collect.run" in log
    assert not (tmp_path / "out.csv").exists()
