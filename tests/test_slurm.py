"""The cluster path against a real SLURM controller and node (perfsweep.cluster.local_slurm)."""

import json
import os
import re
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from conftest import BIN, REPO

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
PROFILE = REPO / "workflow" / "profiles" / "slurm"


OPT_IN = "PERFSWEEP_TEST_SLURM"


def cluster_skip_reason(env=os.environ, euid=None):
    """Why the cluster tests cannot run here, or None. They start daemons (munged, slurmctld, one slurmd
    per node), so they run only when asked: PERFSWEEP_TEST_SLURM=1 (.ci/run sets it)."""
    if env.get(OPT_IN) != "1":
        return f"SLURM tests start daemons: set {OPT_IN}=1 to run them (.ci/run does)"
    if (os.geteuid() if euid is None else euid) != 0:
        return "the local SLURM cluster needs root"
    return None


@pytest.fixture(scope="module")
def cluster():
    """The local multi-node cluster, started for this module and stopped after it (with everything
    local_slurm started, munged too). Installs nothing: with the opt-in and no SLURM, the tests fail."""
    reason = cluster_skip_reason()
    if reason:
        pytest.skip(reason)
    from perfsweep.cluster import local_slurm

    before = local_slurm.running()
    nodes = local_slurm.start(nodes=1)
    yield nodes
    if not before:  # leave a cluster someone else started running, stop ours
        local_slurm.stop(quiet=True)


def snakemake_slurm(cfgfile, cwd, *extra, background=False):
    # targets first: --configfile takes every following word as another config file
    cmd = [str(BIN / "snakemake"), *extra, "--snakefile", str(REPO / "Snakefile"), "--profile", str(PROFILE),
           "--configfile", str(cfgfile)]
    if background:
        return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)


def records(results):
    return {str(p.relative_to(results / "runs")): json.loads(p.read_text()) for p in (results / "runs").rglob("*.json")}


def test_sweep_runs_through_slurm_to_the_medians(cluster, tmp_path):
    cfg = {
        "app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
        "repetitions": 2,
        "studies": {"np": {"vary": {"n": [100, 200], "p": [1, 2]}},
                    "mp": {"vary": {"m": [1, 2], "p": [1, 2]}}},
        "results": str(tmp_path / "results"),
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    targets = [str(tmp_path / "results" / "tables" / s / "medians.csv") for s in ("np", "mp")]
    proc = snakemake_slurm(tmp_path / "c.yaml", tmp_path, *targets)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recs = records(tmp_path / "results")
    assert len(recs) == 16
    for rec in recs.values():
        assert rec["status"] == "ok"
        assert rec["slurm"]["job_id"].isdigit() and rec["slurm"]["nodelist"]
        assert rec["launch"]["command"][1:3] == ["-launcher", "fork"]  # set by the runner inside SLURM
        assert len(rec["ranks"]) == rec["parameters"]["p"]
    assert len({r["slurm"]["job_id"] for r in recs.values()}) == 16  # one allocation per run
    for study in ("np", "mp"):
        med = pd.read_csv(tmp_path / "results" / "tables" / study / "medians.csv")
        assert len(med) == 4 and (med["n_ok"] == 2).all()
    again = snakemake_slurm(tmp_path / "c.yaml", tmp_path, *targets)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_cancelled_run_is_retried_and_the_sweep_completes(cluster, tmp_path):
    cfg = {
        "app": {"name": "ljmd", "args": {"steps": 400}},  # ~10 s per run: long enough to be cancelled
        "parameters": {"n": 300, "m": 2, "d": 0.5, "c": 1.5, "p": 1},
        "repetitions": 1,
        "retries": 1,
        "studies": {"s": {"vary": {"n": [200, 300]}}},
        "results": str(tmp_path / "results"),
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    target = str(tmp_path / "results" / "tables" / "s" / "medians.csv")
    proc = snakemake_slurm(tmp_path / "c.yaml", tmp_path, target, background=True)
    cancelled = None
    deadline = time.time() + 300
    while time.time() < deadline and cancelled is None:
        out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %j"], capture_output=True, text=True).stdout
        jobs = [line.split()[0] for line in out.splitlines() if line.strip()]
        if jobs:
            time.sleep(3)  # let the run start inside the job
            cancelled = jobs[0]
            subprocess.run(["scancel", cancelled], check=True)
        time.sleep(0.5)
    assert cancelled, "no SLURM job was seen running"
    output, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, output[-4000:]
    recs = records(tmp_path / "results")
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs.values())
    retried = [r for r in recs.values() if r["attempt"] == 2]
    assert len(retried) == 1 and retried[0]["slurm"]["job_id"] != cancelled
    assert "SLURM status is: 'CANCELLED'" in output
