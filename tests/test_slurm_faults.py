"""Packs on the local SLURM cluster through the faults a user's cluster shows (issue 57): a pack cut by a
lost node, a running pack requeued, slurmctld restarted while packs run, and sbatch refused while the
controller is down. One test a fault; the faults come in two small sweeps of their own (the faults are
their shape), two apiece, one after the other in each sweep:

- ``lost``: the controller is down when the sweep submits (perfsweep's sbatch and sinfo are refused and
  try again; the controller comes back once they were), then a pack's node is lost mid-pack;
- ``requeued``: a running pack is requeued (``scontrol requeue``), and while the requeued job waits to
  start again slurmctld is stopped for 3 s and started again.

In each the one command completes the sweep, every run is measured once, and the records and the
archive tell what happened. The cluster runs with the short timeouts of perfsweep.cluster.local_slurm's
fast_faults for this module (a lost node's job runs again about 15 s after the loss instead of minutes)
and is put back as the session's other SLURM tests found it afterwards. The sweeps: fault_app
(tests/apps) sleeping 0.5 s a run, 8 runs in 2 packs of 4 (one on each node), retries 0: an attempt the
scheduler cut short for reasons outside the run (node loss, requeue) must not spend the run's only
attempt. Snakemake polls SLURM at most 3 s apart here (tests/sweeps/snakemake_polled.py)."""

import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from sweeps.slurm import snakemake_slurm
from sweeps.tiny import fault_config

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RUN_SECONDS = 0.5
TARGET = "results/tables/f/medians.csv"


@pytest.fixture(scope="module")
def fast_cluster(slurm_cluster):
    from perfsweep.cluster import local_slurm

    local_slurm.start(nodes=2, fast_faults=True)
    yield local_slurm
    local_slurm.start(nodes=2)  # the session's cluster as the other tests found it


FOUR, EIGHT = (1, 2, 4, 6), (1, 2, 4, 6, 8, 9, 10, 12)  # no n that fault_app fails on


def start_sweep(work, ns=FOUR, **config):
    """fault_app over ``ns`` in packs of 4 through the local-slurm profile; the Snakemake process."""
    (work / "state").mkdir(parents=True, exist_ok=True)
    cfg = {**fault_config(work / "state", ns=list(ns), k=1, sleep=RUN_SECONDS, retries=0, timeout=60,
                          results="results"),
           "bundle": "packs", "pack": {"runs": 4, "seconds_per_run": 1}, "studies": {"f": {"vary": {"n": list(ns)}}},
           **config}
    import yaml

    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = open(work / "snakemake.out", "w")
    return subprocess.Popen(snakemake_slurm([TARGET]), cwd=work, stdout=out, stderr=subprocess.STDOUT)


def finish(work, proc, timeout=240):
    proc.wait(timeout=timeout)
    return proc.returncode, (work / "snakemake.out").read_text()


def pack_job(work, deadline):
    """(job id, node) of the sweep's running pack job once its second run is in flight (its first record
    written, the second run's lock file holding its attempt: perfsweep.sweep.pack_run)."""
    from perfsweep import layout

    while time.time() < deadline:
        for pack_file in (work / "results" / "packs").glob("r*.json"):
            outputs = [work / out for _, _, out in json.loads(pack_file.read_text())["runs"]]
            lock = layout.record_lock(outputs[1])
            if outputs[0].exists() and lock.exists() and lock.stat().st_size:
                out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %N %k"], capture_output=True,
                                     text=True).stdout
                for line in out.splitlines():
                    job, node, comment = (line.split(" ", 2) + [""])[:3]
                    if pack_file.stem in comment:
                        return job, node
        time.sleep(0.1)
    raise AssertionError("no pack job with its second run in flight before the deadline")


def records(work):
    return {p.parent.name: json.loads(p.read_text()) for p in (work / "results" / "runs").rglob("rep0.json")}


def archived(work):
    out = {}
    for p in (work / "results" / "archive").rglob("*.json"):
        rec = json.loads(p.read_text())
        out.setdefault(rec["config_id"], []).append(rec)
    return out


def measured_once(work, ns=FOUR):
    """Every run has an ok record and exactly one ok attempt in the archive; returns the records."""
    recs, att = records(work), archived(work)
    assert sorted(recs) == sorted(f"n={n}" for n in ns)
    for config_id, rec in recs.items():
        assert rec["status"] == "ok", rec
        assert sum(a["status"] == "ok" for a in att[config_id]) == 1, att[config_id]
        assert rec["pack"]["id"] in ("r0-p1t1-000", "r0-p1t1-001") and rec["pack"]["of"] == 4
    assert not list((work / "results").rglob("*.tmp"))
    return recs, att


@dataclass
class Faulted:
    work: Path
    returncode: int
    output: str
    job: str  # the SLURM job the fault hit
    node: str | None = None
    outage: tuple[float, float] | None = None  # when slurmctld was down (time.time())


@pytest.fixture(scope="module")
def lost(fast_cluster, tmp_path_factory):
    """The controller down until perfsweep's sbatch (or the sinfo before it) was refused, then back; then
    the node of a pack whose second run runs is lost (its slurmd and the job's processes SIGKILLed), and
    brought back once SLURM has marked it down (as an admin would), the lost job requeued meanwhile."""
    work = tmp_path_factory.mktemp("lost")
    log = work / "results" / "logs" / "sbatch.log"
    refused = lambda: log.exists() and " refused (" in log.read_text()
    t0 = time.time()
    down = threading.Thread(target=fast_cluster.restart_controller, kwargs={"down": refused, "timeout": 60})
    down.start()
    time.sleep(0.5)
    proc = start_sweep(work, EIGHT)
    down.join()
    outage = (t0, time.time())
    job, node = pack_job(work, time.time() + 120)
    lost_at = time.time()
    fast_cluster.lose_node(node)
    while fast_cluster.node_state(node) != "down*" and time.time() - lost_at < 60:
        time.sleep(0.2)
    fast_cluster.restore_node(node)
    rc, out = finish(work, proc)
    return Faulted(work, rc, out, job, node, outage)


@pytest.fixture(scope="module")
def requeued(fast_cluster, tmp_path_factory):
    """A running pack requeued while its second run runs; while the requeued job waits its start delay,
    slurmctld stopped for 3 s and started again."""
    work = tmp_path_factory.mktemp("requeued")
    proc = start_sweep(work, EIGHT)
    job, _ = pack_job(work, time.time() + 120)
    subprocess.run(["scontrol", "requeue", job], check=True)
    until = time.time() + 30  # the runner took its SIGTERM: the attempt it cut is archived
    while not any('"killed"' in p.read_text() for p in (work / "results" / "archive").rglob("*.json")):
        assert time.time() < until, "no attempt archived after the requeue"
        time.sleep(0.05)
    t0 = time.time()
    fast_cluster.restart_controller(down=3)
    outage = (t0, time.time())
    rc, out = finish(work, proc)
    return Faulted(work, rc, out, job, None, outage)


def test_a_pack_cut_by_a_lost_node_keeps_its_runs_and_its_requeued_job_measures_the_rest(lost):
    """The runs before the loss are kept, the lost attempt archived with NODE_FAIL, the rest measured
    once by the requeued job (restart 1), all with the one command."""
    assert lost.returncode == 0, lost.output[-4000:]
    recs, att = measured_once(lost.work, EIGHT)
    gone = [a for runs in att.values() for a in runs if a.get("lost")]
    assert len(gone) == 1, att
    gone = gone[0]
    assert gone["scheduler"]["state"] == "NODE_FAIL" and gone["scheduler"]["job_id"] == lost.job, gone
    assert "lost with its node" in gone["error"] and gone["pack"]["index"] >= 1
    rerun = recs[gone["config_id"]]
    assert rerun["scheduler"]["job_id"] == lost.job and rerun["scheduler"]["restarts"] == 1
    assert rerun["attempt"] == 2 and rerun["cut_short"] == [{"attempt": 1, "state": "NODE_FAIL", "job_id": lost.job}]
    assert "1 attempt(s) cut short by SLURM (NODE_FAIL 1), measured again" in lost.output  # the study's line
    for rec in recs.values():
        if rec["pack"]["id"] == gone["pack"]["id"]:  # kept before the loss, the rest by the requeued job
            assert rec["scheduler"]["restarts"] == (0 if rec["pack"]["index"] < gone["pack"]["index"] else 1), rec
        else:  # the other pack, on the other node, untouched
            assert rec["scheduler"]["restarts"] == 0 and rec["attempt"] == 1


def test_an_sbatch_refused_while_the_controller_is_down_is_tried_again(lost):
    """perfsweep's sbatch (and the plugin's sinfo before it) was refused while the controller was down
    ("Unable to contact slurm controller"), tried again with backoff and went in once slurmctld was
    back: no attempt spent, no failure record (the plugin shows a mended sbatch's messages nowhere:
    results/logs/sbatch.log has them)."""
    assert lost.returncode == 0, lost.output[-4000:]
    refused = (lost.work / "results" / "logs" / "sbatch.log").read_text()
    assert re.search(r"perfsweep: (sinfo|sbatch) refused \(.*Unable to contact slurm controller", refused), refused
    assert "giving up" not in refused and "SLURM sbatch failed" not in lost.output
    recs, att = measured_once(lost.work, EIGHT)
    assert all(r["attempt"] <= 2 for r in recs.values())  # the lost run's second attempt only


def test_a_requeued_running_pack_measures_the_rest_once(requeued):
    """SLURM sends SIGTERM (the runner archives that attempt, killed, REQUEUED), then starts the same
    job again (restart 1), which skips the finished runs and measures the rest."""
    assert requeued.returncode == 0, requeued.output[-4000:]
    recs, att = measured_once(requeued.work, EIGHT)
    killed = [a for runs in att.values() for a in runs if a["status"] == "killed"]
    assert len(killed) == 1 and killed[0]["scheduler"]["state"] == "REQUEUED", killed
    assert killed[0]["scheduler"]["job_id"] == requeued.job and killed[0]["pack"]["index"] >= 1
    rerun = recs[killed[0]["config_id"]]
    assert rerun["scheduler"]["restarts"] == 1 and rerun["attempt"] == 2
    assert rerun["cut_short"] == [{"attempt": 1, "state": "REQUEUED", "job_id": requeued.job}]
    assert "1 attempt(s) cut short by SLURM (REQUEUED 1), measured again" in requeued.output
    for rec in recs.values():
        if rec["pack"]["id"] == killed[0]["pack"]["id"]:
            assert rec["scheduler"]["restarts"] == (0 if rec["pack"]["index"] < killed[0]["pack"]["index"] else 1), rec


def test_the_sweep_goes_on_through_a_slurmctld_restart(requeued):
    """slurmctld was stopped for 3 s and started again on its saved state while the requeued job waited
    and the other pack ran: the plugin's status queries failed meanwhile, the sweep completed with the
    one command, each run measured once (the requeued run twice attempted, once ok)."""
    assert requeued.returncode == 0, requeued.output[-4000:]
    recs, att = measured_once(requeued.work, EIGHT)
    started, back = requeued.outage
    assert back - started >= 3
    # the requeued job started again after the controller came back, and finished its runs after it
    rerun = [r for r in recs.values() if r["scheduler"]["job_id"] == requeued.job and r["scheduler"]["restarts"] == 1]
    assert rerun and all(_when(r["started_at"]) > back - 1 for r in rerun)
    assert sum(len(a) for a in att.values()) == len(EIGHT) + 1  # the one killed attempt beside one each


def _when(iso):
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()
