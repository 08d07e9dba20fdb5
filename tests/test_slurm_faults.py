"""Packs on the local SLURM cluster through faults a user's cluster shows (issue 57), one fault a test,
each its own small sweep (the fault is the test): a pack cut by a lost node, a running pack requeued,
slurmctld restarted while packs run, and sbatch refused while the controller is down. In each the
same command completes the sweep, every run is measured once, and the records and the archive tell
what happened.

The cluster runs with the short timeouts of perfsweep.cluster.local_slurm's fast_faults for this
module (a lost node's job runs again about 15 s after the loss instead of minutes), and is put back
as the session's other SLURM tests found it afterwards. The sweeps: fault_app (tests/apps) sleeping
0.5 s a run, packs of 4 runs (2 s in one job), retries 0: an attempt the scheduler cut short for
reasons outside the run (node loss, requeue) must not spend the run's only attempt. The sweeps of the
node loss and the requeue have a second pack beside the one the fault hits (8 runs, 2 packs, one on
each node): the plugin polls a sweep whose jobs all run less and less often (10 s more after each
poll that finds none ended), and the second pack's end brings its polls back to every 2 s."""

import json
import subprocess
import threading
import time

import pytest

from conftest import BIN, REPO
from sweeps.slurm import PROFILE
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
    (work / "state").mkdir(parents=True)
    cfg = {**fault_config(work / "state", ns=list(ns), k=1, sleep=RUN_SECONDS, retries=0, timeout=60,
                          results="results"),
           "bundle": "packs", "pack": {"runs": 4, "seconds_per_run": 1}, "studies": {"f": {"vary": {"n": list(ns)}}},
           **config}
    import yaml

    (work / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = open(work / "snakemake.out", "w")
    return subprocess.Popen([str(BIN / "snakemake"), TARGET, "--snakefile", str(REPO / "Snakefile"), "--profile",
                             str(PROFILE), "--configfile", "c.yaml"], cwd=work, stdout=out, stderr=subprocess.STDOUT)


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


def test_a_pack_cut_by_a_lost_node_keeps_its_runs_and_its_requeued_job_measures_the_rest(fast_cluster, tmp_path):
    """The pack's node is lost (its slurmd and the job's processes SIGKILLed) while a run after its first
    runs; SLURM requeues the job, which runs again once the node is down (the test brings the node back
    then, as an admin would): the runs before are kept, the lost attempt archived with NODE_FAIL, the
    rest measured once by the requeued job (restart 1), all with the one command."""
    proc = start_sweep(tmp_path, EIGHT)
    job, node = pack_job(tmp_path, time.time() + 120)
    lost_at = time.time()
    fast_cluster.lose_node(node)
    while fast_cluster.node_state(node) != "down*" and time.time() - lost_at < 60:
        time.sleep(0.2)
    fast_cluster.restore_node(node)
    rc, out = finish(tmp_path, proc)
    assert rc == 0, out[-4000:]
    recs, att = measured_once(tmp_path, EIGHT)
    lost = [a for runs in att.values() for a in runs if a.get("lost")]
    assert len(lost) == 1, att
    lost = lost[0]
    assert lost["scheduler"]["state"] == "NODE_FAIL" and lost["scheduler"]["job_id"] == job, lost
    assert "lost with its node" in lost["error"] and lost["pack"]["index"] >= 1
    rerun = recs[lost["config_id"]]
    assert rerun["scheduler"]["job_id"] == job and rerun["scheduler"]["restarts"] == 1
    assert rerun["attempt"] == 2 and rerun["attempts_not_spent"] == 1  # retries 0: the loss spent none
    hit = [r for r in recs.values() if r["pack"]["id"] == lost["pack"]["id"]]
    for rec in hit:  # the runs before the loss kept, the rest measured by the requeued job
        assert rec["scheduler"]["restarts"] == (0 if rec["pack"]["index"] < lost["pack"]["index"] else 1), rec


def test_a_requeued_running_pack_measures_the_rest_once(fast_cluster, tmp_path):
    """``scontrol requeue`` of a running pack job while a run after its first runs: SLURM sends SIGTERM
    (the runner archives that attempt, killed, REQUEUED), then starts the same job again (restart 1),
    which skips the finished runs and measures the rest."""
    proc = start_sweep(tmp_path, EIGHT)
    job, _ = pack_job(tmp_path, time.time() + 120)
    subprocess.run(["scontrol", "requeue", job], check=True)
    rc, out = finish(tmp_path, proc)
    assert rc == 0, out[-4000:]
    recs, att = measured_once(tmp_path, EIGHT)
    killed = [a for runs in att.values() for a in runs if a["status"] == "killed"]
    assert len(killed) == 1 and killed[0]["scheduler"]["state"] == "REQUEUED", killed
    assert killed[0]["scheduler"]["job_id"] == job and killed[0]["pack"]["index"] >= 1
    rerun = recs[killed[0]["config_id"]]
    assert rerun["scheduler"]["restarts"] == 1 and rerun["attempt"] == 2
    hit = [r for r in recs.values() if r["pack"]["id"] == killed[0]["pack"]["id"]]
    for rec in hit:
        assert rec["scheduler"]["restarts"] == (0 if rec["pack"]["index"] < killed[0]["pack"]["index"] else 1), rec


def test_the_sweep_goes_on_through_a_slurmctld_restart(fast_cluster, tmp_path):
    """slurmctld stopped for 3 s and started again (on its saved state) while the pack runs: the
    plugin's status queries fail meanwhile, the job runs on, the sweep completes; nothing measured twice."""
    proc = start_sweep(tmp_path)
    pack_job(tmp_path, time.time() + 120)
    fast_cluster.restart_controller(down=3)
    rc, out = finish(tmp_path, proc)
    assert rc == 0, out[-4000:]
    recs, att = measured_once(tmp_path)
    assert all(len(a) == 1 for a in att.values())  # one attempt each
    assert len({r["scheduler"]["job_id"] for r in recs.values()}) == 1


def test_an_sbatch_refused_while_the_controller_is_down_is_tried_again(fast_cluster, tmp_path):
    """The controller is down when the sweep submits its pack: sbatch fails ("Unable to contact slurm
    controller"), perfsweep's sbatch tries again with backoff, and the job goes in once slurmctld is
    back; no attempt spent, no failure record."""
    down = threading.Thread(target=fast_cluster.restart_controller, kwargs={"down": 6})
    down.start()
    time.sleep(1)
    proc = start_sweep(tmp_path)
    down.join()
    rc, out = finish(tmp_path, proc)
    assert rc == 0, out[-4000:]
    refused = (tmp_path / "results" / "logs" / "sbatch.log").read_text()  # the plugin hides a mended sbatch's stderr
    assert "perfsweep: sinfo refused (" in refused or "perfsweep: sbatch refused (" in refused, refused
    assert "Unable to contact slurm controller" in refused, refused
    recs, att = measured_once(tmp_path)
    assert all(len(a) == 1 for a in att.values())
