"""perfsweep.stages.call: a rule's keys reach its stage function by name, and a mismatch stops the job
with one line naming the rule, the key and the function."""

import subprocess

import pytest

from conftest import BIN, REPO
from perfsweep.stages import RuleMismatch, bind, collect, metrics


def test_bind_hands_keys_and_wildcards_by_name():
    keys = {"input": {"runs": "r.csv"}, "output": {"table": "v.csv", "summary": "s.csv"},
            "params": {"varied": ["n"], "cv_threshold": 0.1}}
    from perfsweep.stages import variability

    got = bind("variability", variability.run, keys, {"study": "nm", "config": "ignored"})
    assert got == {"runs": "r.csv", "table": "v.csv", "summary": "s.csv", "varied": ["n"], "cv_threshold": 0.1,
                   "study": "nm"}


def test_bind_names_rule_key_and_function_on_a_mismatch():
    with pytest.raises(RuleMismatch, match=r"^rule metrics: output key 'pop_png' is not a parameter of "
                                           r"perfsweep\.stages\.metrics\.run \(parameters: ranks, regions"):
        bind("metrics", metrics.run, {"output": {"pop_png": "x.png"}})
    with pytest.raises(RuleMismatch, match=r"^rule collect: parameter 'regions' of perfsweep\.stages\.collect\.run "
                                           r"is given by no input, output, params or wildcard key"):
        bind("collect", collect.run, {"params": {"records": []}, "output": {"runs": "a", "ranks": "b"}})
    with pytest.raises(RuleMismatch, match="key 'runs' appears twice"):
        bind("collect", collect.run, {"input": {"runs": "a"}, "output": {"runs": "b"}})


@pytest.mark.slow
def test_a_real_job_with_a_mismatched_key_fails_before_running(tmp_path):
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
