"""Packs on the local SLURM cluster through the faults a user's cluster shows (issue 57): a pack cut by a
lost node, a running pack requeued, slurmctld restarted while packs run, and sbatch refused while the
controller is down. One test a fault; the faults come in two small sweeps of their own (the faults are
their shape), two apiece, one after the other in each sweep:

- ``lost``: the controller is down when the sweep submits (perfsweep's sbatch and sinfo are refused and
  try again; the controller comes back once they were), then a pack's node is lost mid-pack;
- ``requeued``: a running pack is requeued (``scontrol requeue``), and while the requeued job waits to
  start again slurmctld is stopped for 3 s and started again.

In each the one command completes the sweep, every run is measured once, and the records and the
archive tell what happened. The sweeps (tests/sweeps/slurm_faults.py) are the last part of the session's
cluster work (tests/sweeps/slurm.py, cluster_work), after the shared sweeps, on the cluster with the short
timeouts of perfsweep.cluster.local_slurm's fast_faults (a lost node's job runs again about 15 s after the
loss instead of minutes), put back afterwards. The sweeps: fault_app
(tests/apps) sleeping 0.5 s a run, 8 runs in 2 packs of 4 (one on each node), retries 0: an attempt the
scheduler cut short for reasons outside the run (node loss, requeue) must not spend the run's only
attempt. Snakemake polls SLURM at most 3 s apart here (tests/sweeps/snakemake_polled.py)."""

import json
import re

import pytest

from sweeps.slurm import cluster_part
from sweeps.slurm_faults import EIGHT, FOUR

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


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


@pytest.fixture(scope="module")
def lost(lane):
    """tests/sweeps/slurm_faults.py's lost_sweep: the controller down until perfsweep's sbatch (or the sinfo
    before it) was refused, then back; then the node of a pack whose second run runs is lost, and brought
    back once SLURM has marked it down, the lost job requeued meanwhile."""
    return cluster_part(lane, "lost")


@pytest.fixture(scope="module")
def requeued(lane):
    """tests/sweeps/slurm_faults.py's requeued_sweep: a running pack requeued while its second run runs;
    while the requeued job waits its start delay, slurmctld stopped for 3 s and started again."""
    return cluster_part(lane, "requeued")


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
