"""The config's modeling: section reaches the models stage (the real Snakemake): log_factors gives a
count measured from 1 its log2 factors back; changing it refits the models and runs nothing again.

A sweep of its own, not the session's shared ones: its app is a formula (a reduction tree's time, no
noise), so that whether the model has a log2 factor is decided by the option alone, which no sweep of a
real app's noisy times can promise. One varied parameter, t (5 values, as Extra-P asks): only t's
factors are at stake."""

import json
import sys

import pytest
import yaml

from conftest import snakemake
from sweeps.lane import lane_test
from test_designs_incremental import runs_in

pytestmark = pytest.mark.slow

# a reduction tree over t threads: its time, printed, is n (1 + t log2 t) ms
APP = ("import math, sys; t, n = map(float, sys.argv[1:3]); "
       "print('time', 1e-3 * n * (1 + t * math.log2(t)))")


def fit(tmp_path, modeling):
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{t}} {{n}}", "time_pattern": r"time (\S+)"},
        "parameters": {"t": 1, "n": 1},
        "studies": {"tn": {"vary": {"t": [1, 2, 4, 8, 16]}, "fixed": {"n": 3}}},
        "repetitions": 1,
        "results": str(tmp_path / "results"),
    }
    if modeling is not None:
        cfg["modeling"] = modeling
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = snakemake(str(tmp_path / "results" / "models" / "tn" / "models.json"), "--cores", "2",
                     "--configfile", tmp_path / "c.yaml", cwd=tmp_path)
    models = json.loads((tmp_path / "results" / "models" / "tn" / "models.json").read_text())
    model = next(m["model"] for m in models if (m["region"], m["metric"]) == ("all", "time"))
    t_logs = any(factor[0] == 0 and factor[2] > 0 for term in model["terms"] for factor in term)
    return runs_in(proc.stdout + proc.stderr), t_logs, model["text"]


@lane_test
def test_log_factors_reach_the_models_and_rerun_only_them(tmp_path):
    runs, t_logs, text = fit(tmp_path, None)
    assert runs == 5 and not t_logs, text  # t from 1: powers only by default
    runs, t_logs, text = fit(tmp_path, {"log_factors": ["t"]})
    assert runs == 0 and t_logs and "log2(t)" in text, text
