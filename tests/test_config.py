import copy
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO, snakemake
from perfsweep.config import load_config, load_config_file
from perfsweep.errors import ConfigError
from perfsweep.values import format_value
from sweeps.lane import lane_test

BASE = {
    "app": {"name": "ljmd", "args": {"steps": 5}},
    "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
    "studies": {"nm": {"vary": {"n": [100, 200], "m": [1, 2, 3]}}},
    "repetitions": 2,
}


def with_change(path, value):
    cfg = copy.deepcopy(BASE)
    node = cfg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return cfg


def test_valid_config_expands_grid_with_defaults():
    sweep = load_config(BASE, "x.yaml")
    (study,) = sweep.studies
    cfgs = study.configurations()
    assert len(cfgs) == 6 and sweep.n_runs() == 12
    assert cfgs[0].config_id == "n=100_m=1"
    assert cfgs[-1].params == {"n": 200, "m": 3, "d": 0.5, "c": 2.0, "p": 1}
    assert sweep.cv_threshold == 0.1 and sweep.cv_policy == "keep-flagged"
    assert sweep.launcher == "{mpiexec} -n {p}"


def test_study_fixed_overrides_defaults_and_keeps_vary_order():
    cfg = with_change(["studies"], {"pm": {"vary": {"p": [1, 2], "m": [1, 2]}, "fixed": {"n": 300}}})
    (study,) = load_config(cfg, "x.yaml").studies
    assert study.varied == ["p", "m"]
    assert study.configurations()[0].config_id == "p=1_m=1"
    assert study.fixed["n"] == 300


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (["repetitions"], "three", "x.yaml: repetitions: 'three' is not of type 'integer'"),
        (["studies", "nm", "vary", "x"], [1, 2], "x.yaml: studies.nm.vary.x: unknown parameter 'x'"),
        (["studies", "nm", "vary", "n"], [100], "x.yaml: studies.nm.vary.n: [100]: a varied parameter needs at least 2 values"),
        (["studies", "nm", "vary", "d"], [0.5, -0.5], "x.yaml: studies.nm.vary.d[1]: -0.5 is not > 0 (reduced density)"),
        (["parameters", "d"], -1, "x.yaml: parameters.d: -1 is not > 0 (reduced density)"),
        (["studies", "nm", "vary"], {}, "x.yaml: studies.nm.vary: empty grid"),
        (["studies"], {}, "x.yaml: studies: {} should be non-empty"),
        (["studies", "nm", "vary", "m"], [1, 2.5], "x.yaml: studies.nm.vary.m[1]: 2.5 is not a whole number"),
        (["variability", ], {"policy": "maybe"}, "x.yaml: variability.policy: 'maybe' is not one of"),
        (["studies", "nm", "fixed"], {"n": 5}, "x.yaml: studies.nm.fixed.n: parameter is both varied and fixed"),
        (["modeling"], {"log_factors": ["m", "q"]}, "x.yaml: modeling.log_factors[1]: unknown parameter 'q' (known: "),
        (["modeling"], {"log_factors": ["m"], "powers_only": ["m", "n"]}, "x.yaml: modeling: m in both log_factors"),
        (["modeling"], {"logs": ["m"]}, "x.yaml: modeling: unknown key(s) ('logs' was unexpected)"),
        (["modeling"], {"powers_only": ["m", "m"]}, "x.yaml: modeling.powers_only: ['m', 'm'] has non-unique elements"),
        (["modeling"], {"simplest_within": -1}, "x.yaml: modeling.simplest_within: -1 is less than the minimum of 0"),
        (["studies", "nm", "design"], {"kind": "sparse", "base": ""}, "x.yaml: studies.nm.design.base: '' is not a base"),
        (["studies", "nm", "vary", 3], [1, 2], "x.yaml: studies.nm.vary: key 3 is not text (int); quote it"),
        (["app", "args", "temperature"], "hot", "x.yaml: app.args.temperature: 'hot' is not a finite number"),
        (["app", "args", "release-memory"], 1, "x.yaml: app.args.release-memory: 1 is not true or false"),
        (["app", "args", "report"], "r.json", "x.yaml: app.args.report: unknown option 'report' of app ljmd"),
        (["app", "args", "slow-region"], "forces=0.8", "x.yaml: app.args.slow-region: --slow-region forces=0.8: "
                                                       "give REGION=FACTOR with REGION one of neighbours"),
        (["app", "args", "slow-region"], "force=1.2", "x.yaml: app.args.slow-region: --slow-region force=1.2: "),
        (["app", "args", "all-pairs"], "all", "x.yaml: app.args.all-pairs: 'all' is not one of neighbours, forces"),
    ],
)
def test_bad_config_gives_one_line_naming_file_field_value(path, value, expected):
    with pytest.raises(ConfigError) as err:
        load_config(with_change(path, value), "x.yaml")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(expected), text


def test_a_placeholder_with_a_format_spec_uses_its_parameter():
    cfg = {"app": {"command": "./app --size {n:>5}", "time_pattern": "t ([0-9.]+)"}, "parameters": {"n": 1},
           "studies": {"s": {"vary": {"n": [1, 2]}}}}
    assert load_config(cfg, "x.yaml").n_runs() == 10


def test_yaml_syntax_error_names_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("app:\n  name: ljmd\n parameters: [\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: line \d+: not valid YAML"):
        load_config_file(bad)


def test_format_value_is_canonical():
    assert [format_value(v) for v in (2.0, 0.5, 3, 1e-5)] == ["2", "0.5", "3", "1e-05"]


def test_shipped_configs_are_valid():
    default = load_config_file(REPO / "config" / "config.yaml")
    paper = load_config_file(REPO / "config" / "ms2-paper.yaml")
    assert len(paper.studies) == 8 and paper.n_runs() == 6480
    for study in default.studies:
        for name, values in study.vary.items():
            if name != "p":
                assert len(values) >= 5, (study.name, name)


def test_cli_validate_bad_config_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(with_change(["studies", "nm", "vary", "d"], [0.5, -0.5])))
    proc = subprocess.run([sys.executable, "-m", "perfsweep.cli", "validate", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"perfsweep: {bad}: studies.nm.vary.d[1]: -0.5 is not > 0 (reduced density)"]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_snakemake_stops_before_any_job_on_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    cfg = with_change(["studies", "nm", "vary", "x"], [1, 2])
    cfg["results"] = str(tmp_path / "results")
    bad.write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = snakemake("--cores", "1", "--configfile", bad, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.splitlines() if l.startswith("perfsweep:")]
    assert lines == ["perfsweep: config error: bad.yaml: studies.nm.vary.x: unknown parameter 'x' (known: n, m, d, c, p)"]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
@lane_test
def test_paper_config_plans_all_runs(tmp_path):
    proc = snakemake("-n", "--configfile", REPO / "config" / "ms2-paper.yaml", cwd=tmp_path, timeout=300)
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, re.MULTILINE))
    assert counts["run"] == "6480" and counts["collect"] == "8"


def test_impossible_ljmd_configuration_is_caught_before_any_job():
    cfg = with_change(["studies", "nm", "vary", "n"], [20, 100])
    cfg["parameters"]["c"] = 3.0
    with pytest.raises(ConfigError, match=r"x.yaml: studies.nm: configuration n=20_m=1: --c 3.0: cut-off plus"):
        load_config(cfg, "x.yaml")
