"""The fault sweeps of tests/test_slurm_faults.py, run by the session's cluster work (tests/sweeps/slurm.py,
cluster_work) on the cluster with perfsweep.cluster.local_slurm's fast-fault timeouts: ``cluster`` is that
module. Each sweep is fault_app (tests/apps) sleeping 0.5 s a run, 8 runs in 2 packs of 4 (one on each
node), retries 0, with two faults one after the other; tests/test_slurm_faults.py says which and what it
asserts."""

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from .slurm import snakemake_slurm

RUN_SECONDS = 0.5
TARGET = "results/tables/f/medians.csv"


FOUR, EIGHT = (1, 2, 4, 6), (1, 2, 4, 6, 8, 9, 10, 12)  # no n that fault_app fails on


def start_sweep(work, ns=FOUR, **config):
    """fault_app over ``ns`` in packs of 4 through the local-slurm profile; the Snakemake process."""
    from .tiny import fault_config  # (here: the plugin sweeps.tiny loads after this one)

    (work / "state").mkdir(parents=True, exist_ok=True)
    cfg = {**fault_config(work / "state", ns=list(ns), k=1, sleep=RUN_SECONDS, retries=0, timeout=60,
                          results="results"),
           "bundle": "packs", "pack": {"runs": 4, "seconds_per_run": 1}, "studies": {"f": {"vary": {"n": list(ns)}}},
           **config}
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


@dataclass
class Faulted:
    work: Path
    returncode: int
    output: str
    job: str  # the SLURM job the fault hit
    node: str | None = None
    outage: tuple[float, float] | None = None  # when slurmctld was down (time.time())


def lost_sweep(cluster, work: Path) -> Faulted:
    """The controller down until perfsweep's sbatch (or the sinfo before it) was refused, then back; then
    the node of a pack whose second run runs is lost (its slurmd and the job's processes SIGKILLed), and
    brought back once SLURM has marked it down (as an admin would), the lost job requeued meanwhile."""
    log = work / "results" / "logs" / "sbatch.log"
    refused = lambda: log.exists() and " refused (" in log.read_text()
    t0 = time.time()
    down = threading.Thread(target=cluster.restart_controller, kwargs={"down": refused, "timeout": 60})
    down.start()
    time.sleep(0.5)
    proc = start_sweep(work, EIGHT)
    down.join()
    outage = (t0, time.time())
    job, node = pack_job(work, time.time() + 120)
    lost_at = time.time()
    cluster.lose_node(node)
    while cluster.node_state(node) != "down*" and time.time() - lost_at < 60:
        time.sleep(0.2)
    cluster.restore_node(node)
    rc, out = finish(work, proc)
    return Faulted(work, rc, out, job, node, outage)


def requeued_sweep(cluster, work: Path) -> Faulted:
    """A running pack requeued while its second run runs; while the requeued job waits its start delay,
    slurmctld stopped for 3 s and started again."""
    proc = start_sweep(work, EIGHT)
    job, _ = pack_job(work, time.time() + 120)
    subprocess.run(["scontrol", "requeue", job], check=True)
    until = time.time() + 30  # the runner took its SIGTERM: the attempt it cut is archived
    while not any('"killed"' in p.read_text() for p in (work / "results" / "archive").rglob("*.json")):
        assert time.time() < until, "no attempt archived after the requeue"
        time.sleep(0.05)
    t0 = time.time()
    cluster.restart_controller(down=3)
    outage = (t0, time.time())
    rc, out = finish(work, proc)
    return Faulted(work, rc, out, job, None, outage)


