"""The sweeps on the local SLURM cluster (perfsweep.cluster.local_slurm: a real controller and two nodes n1, n2
of one CPU each on this host), through workflow/profiles/local-slurm, as tests/test_slurm.py reads them.

The session's cluster work (``cluster_work``, below: the first task of the test lane, tests/sweeps/lane.py)
starts the cluster once, runs the shared sweeps and then tests/test_slurm_faults.py's fault sweeps, and
stops the cluster, beside the tests that need no quiet host; ``slurm_sweeps`` is its first part. The shared sweeps run all at the same
time (one Snakemake process each): the two one-CPU nodes are the bottleneck (each run job costs about 5 s of a node, two
Snakemake starts in the job and the run), and a sweep that waits for its start-up, for SLURM's status
polls or for its post-processing leaves the nodes to the others' jobs. Each sweep is as small as what its
tests assert allows:

- ``srun``: the ordinary sweep, the default launcher (srun), one job per run: p = 1 and 2, 2 repetitions
  (the medians, the placement on the nodes, the run order and nice values); run a second time once it
  is done (nothing to do).
- ``mpich``: MPICH's mpiexec, ``bundle: repetitions`` (one allocation per configuration).
- ``openmpi``: Open MPI's mpirun, with Debian's Python and mpi4py (only where they are installed).
- ``packed``: the ``srun`` sweep's runs in packs (``bundle: packs``), each configuration as two identical
  variants: 4 pack jobs of 2 runs.
- ``paired``: ``variants:`` before and after, paired runs back to back, to both variants' models (then
  compare); no figures or report (local rules on the submit host, which the local sweeps test: drawn
  after its jobs, they were the last 10 s of this fixture).

and three sweeps whose shape is what their test checks (each its own config, started with the others):

- ``toomany``: p = 3 on 2 CPUs, which sbatch rejects: the run fails instead of hanging.
- ``lastattempt``: ``retries: 0``, one run cancelled while it runs: a failure record, the rest modelled.
- ``retried``: ``retries: 1``, one run cancelled while it runs: retried, the sweep completes.

A config holds one launcher, one bundle mode, one retries and one set of variants, so these are eight
configs; they share the cluster, which runs their jobs in between each other's (nothing here asserts on
what a job's neighbours did to its timings)."""


from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import BIN, REPO
from sweeps import Sweep
from sweeps.lane import lane_task

PROFILE = REPO / "workflow" / "profiles" / "local-slurm"
OPT_IN = "PERFSWEEP_TEST_SLURM"
DEBIAN_PYTHON = "/usr/bin/python3"
TIMEOUT = 1200  # seconds for all sweeps together

LJMD = {"app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1}}
# runs of about 4 s (c = 6) and 1-2 s (c <= 2.5) on this host: long enough to be cancelled while they run
LONG = {"app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 3000, "m": 3, "d": 0.5, "c": 1.5, "p": 1}}


def cluster_skip_reason(env=os.environ, euid=None):
    """Why the cluster tests cannot run here, or None. They start daemons (munged, slurmctld, one slurmd
    per node), so they run only when asked: PERFSWEEP_TEST_SLURM=1 (.ci/run sets it)."""
    if env.get(OPT_IN) != "1":
        return f"SLURM tests start daemons: set {OPT_IN}=1 to run them (.ci/run does)"
    if (os.geteuid() if euid is None else euid) != 0:
        return "the local SLURM cluster needs root"
    return None


def debian_mpi4py_on_open_mpi():
    """Whether Debian's Open MPI and its mpi4py and numpy are installed (the Open MPI sweep's app)."""
    if not os.path.exists("/usr/bin/orterun"):
        return False
    proc = subprocess.run([DEBIAN_PYTHON, "-c", "import mpi4py, numpy"], capture_output=True)
    return proc.returncode == 0


def openmpi_app():
    """The same ljmd run by Debian's Python with Debian's mpi4py (built on Debian's Open MPI; the
    project's mpi4py is built on MPICH's wheel); the config's setup puts perfsweep's source on its path."""
    return {"app": {"command": "{launcher} " + DEBIAN_PYTHON + " -m perfsweep.apps.ljmd --n {n} --m {m} --d {d}"
                               " --c {c} --steps 4 --report timings-p{p}.json",
                    "timings_json": "timings-p{p}.json"},
            "parameters": LJMD["parameters"]}


def medians(study):
    return f"results/tables/{study}/medians.csv"


# name: (config, targets (none: the whole workflow), the run to cancel once it runs: (study, config id)).
# They start together but for the paired sweep, which starts once the others have submitted their jobs: a
# sweep's Snakemake polls SLURM less and less often while none of its jobs end (the plugin adds 10 s to the
# interval after each poll that finds nothing finished), so a sweep of few jobs that wait behind many others
# learned of its end up to half a minute late; the paired sweep's many jobs end one after the other.
LAST = "paired"
SWEEPS = {
    "lastattempt": ({**LONG, "repetitions": 1, "retries": 0,
                     "studies": {"lastattempt": {"vary": {"c": [1.5, 2.5, 6.0]}}}},
                    [medians("lastattempt"), "results/models/lastattempt/models.csv"], ("lastattempt", "c=6")),
    "retried": ({**LONG, "repetitions": 1, "retries": 1, "studies": {"retried": {"vary": {"c": [1.5, 6.0]}}}},
                [medians("retried")], ("retried", "c=6")),
    "toomany": ({**LJMD, "repetitions": 1, "studies": {"toomany": {"vary": {"p": [1, 3]}}}},
                [medians("toomany")], None),
    "mpich": ({**LJMD, "repetitions": 2, "cluster": {"launcher": "mpich"}, "bundle": "repetitions",
               "studies": {"p": {"vary": {"p": [1, 2]}}}}, [medians("p")], None),
    "openmpi": ({**openmpi_app(), "repetitions": 1,
                 "cluster": {"launcher": "openmpi", "setup": f"export PYTHONPATH={REPO / 'src'}"},
                 "studies": {"p": {"vary": {"p": [1, 2]}}}}, [medians("p")], None),
    # steps 40: runs of about 0.1 s, which test_slurm's timing test compares with local runs
    "srun": ({"app": {"name": "ljmd", "args": {"steps": 40}}, "parameters": LJMD["parameters"], "repetitions": 2,
              "studies": {"np": {"vary": {"p": [1, 2]}}}}, [medians("np")], None),
    # the srun sweep's configurations in packs (bundle: packs), with two identical variants: 4 pack jobs of 2
    # runs (one round and one process count each, a configuration's variants side by side)
    "packed": ({"app": {"name": "ljmd", "args": {"steps": 40}}, "parameters": LJMD["parameters"], "repetitions": 2,
                "bundle": "packs", "pack": {"runs": 4, "seconds_per_run": 1}, "variants": {"a": {}, "b": {}},
                "studies": {"np": {"vary": {"p": [1, 2]}}}}, [medians("np@a"), medians("np@b")], None),
    # one repetition: the pairs are what its test reads (each configuration's variants adjacent), 6 jobs
    # (3 configurations: with 2 the models are none, and compare has nothing to judge)
    "paired": ({**LJMD, "repetitions": 1, "variants": {"before": {}, "after": {"args": {"steps": 5}}},
                "studies": {"s": {"vary": {"n": [100, 150, 200]}}}},
               ["results/models/s@before/models.json", "results/models/s@after/models.json"], None),
}


@dataclass
class ClusterSweep(Sweep):
    """A sweep run on the cluster: its Snakemake's exit code and output (stdout and stderr together),
    the job cancelled while it ran (or why none was), and the second run's exit code and output."""

    output: str = ""
    cancelled: str | None = None
    cancel_error: str | None = None
    again: tuple[int, str] | None = None
    nice: dict[str, int | None] | None = None  # job id: the nice value SLURM held once the sweeps ended

    def records(self) -> dict:
        import json

        return {str(p.relative_to(self.results / "runs")): json.loads(p.read_text())
                for p in (self.results / "runs").rglob("*.json")}


POLLED = Path(__file__).with_name("snakemake_polled.py")


def snakemake_slurm(targets, *extra):
    """The Snakemake command of a sweep in its work directory (targets first: --configfile takes every
    following word as another config file): Snakemake with its SLURM status polls at most 3 s apart
    (tests/sweeps/snakemake_polled.py says why)."""
    return [str(BIN / "python"), str(POLLED), *targets, *extra, "--snakefile", str(REPO / "Snakefile"),
            "--profile", str(PROFILE), "--configfile", "c.yaml"]


# SLURM (priority/basic here) starts the jobs in the order of their submission, nice shifting it a little.
# The sweeps are submitted at the same time, so a cancelled run's job could wait behind the others' jobs,
# and so would the attempt after it, submitted later still; and meanwhile its Snakemake polls less and less
# often (the plugin adds 10 s to the interval after each poll that finds nothing finished): the sweep
# ended a minute after the others. So the canceller moves the cancelled run's jobs, the first and the one
# after it, to the front of the queue (an admin's `scontrol update job=... priority=`): what the tests
# check is which job ran and what was written, not when. (It clears those jobs' nice values, which only
# the order tests read, on other sweeps.)
FRONT = 4_294_967_000  # above priority/basic's (2^32 - 2^16 = 4,294,901,760 less one per job submitted)


def cancel_when_running(study, config_id, log, ended, deadline):
    """scancel the job of ``study``'s run ``config_id`` (the plugin puts the rule's wildcards in the job's
    comment) once the runner in it has started the run (its first attempt's line in the run's log), and
    move that job and the attempt after it to the front of the queue; returns the cancelled job's id once
    the next attempt is submitted (or the sweep ``ended()``)."""
    cancelled, moved = None, set()
    while time.time() < deadline and not (cancelled and ended()):
        out = subprocess.run(["squeue", "-h", "-t", "PENDING,RUNNING", "-o", "%i %T %k"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            job, state, comment = (line.split(" ", 2) + [""])[:3]
            if study not in comment or config_id not in comment or job == cancelled:
                continue
            if state == "PENDING" and job not in moved:
                # (no check: a job that started meanwhile needs no place in the queue)
                subprocess.run(["scontrol", "update", f"jobid={job}", f"priority={FRONT}"], capture_output=True)
                moved.add(job)
            if cancelled and job in moved:
                return cancelled  # the next attempt, at the front of the queue
            if not cancelled and state == "RUNNING" and log.exists() and "attempt 1 of" in log.read_text():
                subprocess.run(["scancel", job], check=True)
                cancelled = job
        time.sleep(0.2)
    if cancelled:
        return cancelled
    raise AssertionError(f"no running SLURM job for {study} {config_id} before the deadline")


def submitted(sweep, proc, until):
    """Wait until the sweep's Snakemake has submitted a job (or ended, or ``until``)."""
    out = sweep.work / "snakemake.out"
    while time.time() < until and proc.poll() is None and "has been submitted with SLURM jobid" not in out.read_text():
        time.sleep(0.2)


def run_shared_sweeps(root: Path) -> dict[str, ClusterSweep]:
    """Every cluster sweep (this module's SWEEPS) in ``root``, run at the same time, on the running cluster;
    {name: ClusterSweep}. The Open MPI sweep runs only where Debian's Open MPI and mpi4py are installed (its
    test says what then)."""
    deadline = time.time() + TIMEOUT
    root.mkdir(parents=True, exist_ok=True)
    sweeps, procs, logs, threads = {}, {}, {}, []
    for name, (config, targets, cancel) in SWEEPS.items():
        if name == LAST:  # its jobs behind the others' (SWEEPS says why)
            for other in procs:
                submitted(sweeps[other], procs[other], min(deadline, time.time() + 60))
        if name == "openmpi" and not debian_mpi4py_on_open_mpi():
            continue
        sweep = ClusterSweep(root / name, {})
        sweep.work.mkdir()
        sweep.write_config({**config, "results": "results"})
        logs[name] = open(sweep.work / "snakemake.out", "w")
        procs[name] = subprocess.Popen(snakemake_slurm(targets), cwd=sweep.work, stdout=logs[name],
                                       stderr=subprocess.STDOUT, text=True)
        sweeps[name] = sweep
        if cancel:
            def canceller(sweep=sweep, proc=procs[name], study=cancel[0], config_id=cancel[1]):
                try:
                    log = sweep.results / "logs" / "runs" / study / config_id / "rep0.log"
                    sweep.cancelled = cancel_when_running(study, config_id, log, lambda: proc.poll() is not None,
                                                          deadline)
                except Exception as exc:  # the test that reads this sweep says it
                    sweep.cancel_error = repr(exc)
            threads.append(threading.Thread(target=canceller, daemon=True))
            threads[-1].start()
    again = None
    try:
        while time.time() < deadline and (any(p.poll() is None for p in procs.values())
                                           or (again and again.poll() is None)):
            if again is None and procs["srun"].poll() is not None:  # once done, again: nothing to do
                logs["again"] = open(sweeps["srun"].work / "again.out", "w")
                again = subprocess.Popen(snakemake_slurm(SWEEPS["srun"][1]), cwd=sweeps["srun"].work,
                                         stdout=logs["again"], stderr=subprocess.STDOUT, text=True)
            time.sleep(0.5)
    finally:
        for proc in [*procs.values(), *([again] if again else [])]:
            if proc.poll() is None:  # past the deadline: the test of its sweep fails on its exit code
                proc.kill()
                proc.wait()
        for log in logs.values():
            log.close()
    for thread in threads:
        thread.join(timeout=max(1.0, deadline - time.time()))
    for name, sweep in sweeps.items():
        sweep.returncode, sweep.output = procs[name].returncode, (sweep.work / "snakemake.out").read_text()
    if again:
        sweeps["srun"].again = (again.returncode, (sweeps["srun"].work / "again.out").read_text())
    for sweep in sweeps.values():  # SLURM forgets ended jobs (MinJobAge), and the tests read them much later
        jobs = {r["slurm"]["job_id"] for r in sweep.records().values() if r.get("slurm")} if sweep.results.exists() else ()
        sweep.nice = {job: slurm_nice(job) for job in jobs}
    return sweeps


def slurm_nice(job_id):
    """The nice value SLURM holds for a job (None: it does not know the job)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=60)
    words = out.stdout.split() if out.returncode == 0 else []
    return next((int(w.removeprefix("Nice=")) for w in words if w.startswith("Nice=")), None)


# ---- the session's cluster work: the test lane's first task (tests/sweeps/lane.py)

# the parts of the work, by the fixture a test asks for: the shared sweeps; the fault sweeps of
# tests/test_slurm_faults.py (tests/sweeps/slurm_faults.py), on the cluster with fast-fault timeouts
PARTS = {"slurm_sweeps": "shared", "lost": "faults", "requeued": "faults"}


def cluster_wanted(items):
    """The parts of the cluster work the selected tests ask for, or None (none, or no opt-in)."""
    parts = {PARTS[name] for item in items for name in item.fixturenames if name in PARTS}
    return (parts,) if parts and not cluster_skip_reason() else None


def cluster_work(root: Path, parts: set[str]) -> dict:
    """Everything the session does on the local cluster: start it, run the shared sweeps
    (:func:`run_shared_sweeps`), then, on the cluster restarted with fast-fault timeouts, the fault sweeps
    one after the other (then the timeouts put back), and stop the cluster (unless it ran before the
    session). {step: ("ok", value) or ("failed", traceback)}, and "conf": the machine's slurm.conf before
    and after.

    The cluster's jobs are about one of the two cores' work for three minutes, mostly Snakemake starts
    (162 CPU-s in 171 s alone here): the test lane runs them beside the tests that need no quiet host."""
    import traceback

    from perfsweep.cluster import local_slurm

    from .slurm_faults import lost_sweep, requeued_sweep

    out = {}

    def attempt(step, func, *args):
        try:
            out[step] = ("ok", func(*args))
        except BaseException:  # the test that reads this step says it
            out[step] = ("failed", traceback.format_exc())

    before, conf = local_slurm.running(), local_slurm.machine_conf()
    try:
        attempt("cluster", local_slurm.start, 2)
        if out["cluster"][0] == "ok" and "shared" in parts:
            attempt("shared", run_shared_sweeps, root / "slurm")
        if out["cluster"][0] == "ok" and "faults" in parts:
            attempt("fast", local_slurm.start, 2, 60.0, True)
            if out["fast"][0] == "ok":
                attempt("lost", lost_sweep, local_slurm, root / "lost")
                attempt("requeued", requeued_sweep, local_slurm, root / "requeued")
            attempt("cluster", local_slurm.start, 2)  # as the session found it
    finally:
        if not before:  # leave a cluster someone else started running, stop ours
            local_slurm.stop(quiet=True)
        # the machine's slurm.conf as it was (none: a SLURM client would wait for the gone controller)
        out["conf"] = (conf, local_slurm.CONF.read_text() if local_slurm.CONF.exists() else None)
    return out


lane_task("cluster", cluster_wanted, cluster_work)


def cluster_part(lane, part: str):
    """A part of the session's cluster work, for its fixture: skipped without the opt-in; what failed
    in the work, or a slurm.conf not put back, fails the test that asks."""
    reason = cluster_skip_reason()
    if reason:
        pytest.skip(reason)
    results = lane.task_result("cluster")
    for step in ("cluster", "fast", part) if part != "shared" else ("cluster", part):
        status, value = results.get(step, ("failed", "not run"))
        if status != "ok":
            raise AssertionError(f"the cluster work's step {step!r} failed:\n{value}")
    before, after = results["conf"]
    assert after == before, f"the machine's slurm.conf was not put back: {after!r}, was {before!r}"
    return results[part][1]


@pytest.fixture(scope="session")
def slurm_sweeps(lane):
    """Every cluster sweep (this module's SWEEPS), run at the same time: {name: ClusterSweep}."""
    return cluster_part(lane, "shared")
