"""Exclusive local runs (config key exclusive:): with the real Snakemake on 2 cores, runs of one process
each never overlap when exclusive (the default), and do overlap when the config allows it."""

import datetime as dt
import json
import sys

import pytest
import yaml

from conftest import snakemake
from sweeps.lane import lane_test

pytestmark = pytest.mark.slow

APP = "import time; time.sleep(0.5); print('ok')"


def run_intervals(tmp_path, exclusive):
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{n}}"},
        "parameters": {"n": 1},
        "studies": {"s": {"vary": {"n": [1, 2, 3, 4]}}},
        "repetitions": 1,
        "results": str(tmp_path / "results"),
    }
    if exclusive is not None:
        cfg["exclusive"] = exclusive
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    records = [str(tmp_path / "results" / "runs" / "s" / f"n={n}" / "rep0.json") for n in (1, 2, 3, 4)]
    snakemake(*records, "--cores", "2", "--configfile", path, cwd=tmp_path)
    spans = []
    for rec in map(json.loads, map(lambda p: open(p).read(), records)):
        assert rec["status"] == "ok"
        spans.append(tuple(dt.datetime.fromisoformat(rec[k]) for k in ("started_at", "finished_at")))
    return sorted(spans)


def overlaps(spans):
    return sum(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))


@lane_test
def test_exclusive_runs_never_overlap_and_repetitions_run_in_rounds(tmp_path):
    """The default (exclusive): no two runs overlap. And every configuration's first run before any second
    one, and so on: the k runs of a configuration sample the machine at k times spread over the sweep,
    not within seconds of each other (two studies, one with its own k). One sweep for both: 10 runs of
    0.3 s."""
    app = "import time; time.sleep(0.3); print('ok')"
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{app}\" {{n}}"},
        "parameters": {"n": 1},
        "studies": {"a": {"vary": {"n": [1, 2]}}, "b": {"vary": {"n": [3, 4]}, "repetitions": 2}},
        "repetitions": 3,
        "results": str(tmp_path / "results"),
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    records = [tmp_path / "results" / "runs" / s / f"n={n}" / f"rep{k}.json"
               for s, ns, reps in (("a", (1, 2), 3), ("b", (3, 4), 2)) for n in ns for k in range(reps)]
    snakemake(*records, "--cores", "2", "--configfile", path, cwd=tmp_path)
    recs = [json.loads(p.read_text()) for p in records]
    assert all(rec["status"] == "ok" for rec in recs)
    spans = sorted(tuple(dt.datetime.fromisoformat(rec[k]) for k in ("started_at", "finished_at")) for rec in recs)
    assert overlaps(spans) == 0, spans
    runs = sorted((rec["started_at"], rec["repetition"], rec["study"], rec["config_id"]) for rec in recs)
    assert [r[1] for r in runs] == sorted(r[1] for r in runs), runs


@pytest.mark.timing
def test_non_exclusive_runs_share_the_cores(tmp_path):
    """Real start and end times: with exclusive: false Snakemake starts two of the 4 runs of 0.5 s at once
    on the 2 cores. For no pair to overlap, each run started together with another would have to begin
    after the other's 0.5 s were over: a delay that host load does not put between two processes started
    together."""
    spans = run_intervals(tmp_path, False)
    assert overlaps(spans) >= 1, spans
