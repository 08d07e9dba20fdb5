"""A real SLURM cluster of several nodes on this machine, for trying and testing the cluster path.

    python -m perfsweep.cluster.local_slurm install   # Debian's slurmctld, slurmd, slurm-client, munge
    python -m perfsweep.cluster.local_slurm start [--nodes K] [--fast-faults]   # returns when every node is idle
    python -m perfsweep.cluster.local_slurm status
    python -m perfsweep.cluster.local_slurm stop      # stops every daemon start started (munged too)
    python -m perfsweep.cluster.local_slurm lose-node n1 | restore-node n1 | restart-controller [--down S]

Needs root. ``start`` on the command line installs the packages if they are missing (you asked for a
cluster); the function :func:`start` never installs anything, so a test fixture cannot change the
machine's packages by accident (see tests/test_slurm.py: the cluster tests run only with
PERFSWEEP_TEST_SLURM=1).

It writes /etc/slurm/slurm.conf (the plugin's job steps clear SLURM_* variables, so the config must
be at the default path), creates a munge key if there is none, and starts munged, slurmctld and one
slurmd per node by hand (no systemd here). What it started is written to
``/var/lib/slurm-perfsweep/started.json``; ``stop`` stops exactly those processes, munged included, and
leaves a munged it found already running alone. ``stop`` also puts back the slurm.conf that ``start``
found (or removes its own): a SLURM client configured for a controller that is gone waits about 10 s
for it in every call, and the Snakemake SLURM plugin calls ``scontrol`` whenever Snakemake starts.

Nodes: Debian's SLURM is built with multiple-slurmd support, so the K nodes ``n1..nK`` are K slurmd
processes on this host, each on its own port and declaring its honest share of the cores
(``nproc // K`` CPUs each, never more CPUs than exist: timings of runs that share a core are
meaningless). With 2 cores the default is 2 nodes of 1 CPU, so a 2-rank run spans 2 nodes.
``EnforcePartLimits=ALL`` makes sbatch reject a job that asks for more CPUs than the cluster has,
instead of leaving it pending forever.

Faults (tests of node loss, requeue and controller restart): :func:`lose_node` kills a node the way a
lost machine dies (its slurmd and its jobs' processes, SIGKILL), :func:`restore_node` brings it back,
:func:`restart_controller` restarts slurmctld on its saved state. With Slurm's timeouts a lost node's
job starts again minutes later; ``start(fast_faults=True)`` shortens them to seconds (see
:func:`slurm_conf`). ``stop`` also kills the processes of jobs still running on the nodes it stops
(slurmd leaves its jobs' slurmstepd running when it stops).

Accounting: without slurmdbd, ``sacct`` answers "accounting storage is disabled", so the Snakemake SLURM
plugin must poll job states with ``squeue`` (``slurm-status-command: squeue`` in
workflow/profiles/local-slurm). Finished jobs stay visible to squeue for MinJobAge seconds, longer
than the plugin's polling interval.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

CONF = Path("/etc/slurm/slurm.conf")
STATE = Path("/var/lib/slurm-perfsweep")
STARTED = STATE / "started.json"
CONF_BEFORE = STATE / "slurm.conf.before.json"  # {"text": the slurm.conf start replaced, or null: none}
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
CTLD_PID = STATE / "slurmctld.pid"
MUNGED_PID = Path("/run/munge/munged.pid")
TASK_PROLOG = STATE / "task-prolog.sh"  # prints the environment of every task (slurm.conf TaskProlog)
BASE_PORT = 17000
PARTITION = "debug"


def installed() -> bool:
    return all(shutil.which(x) for x in ("slurmctld", "slurmd", "sinfo", "munged"))


def install() -> None:
    """Install Debian's SLURM and munge (only when asked: the CLI's install/start, or .ci/run)."""
    if installed():
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES], check=True, env=env)


def default_nodes(cores: int | None = None) -> int:
    cores = cores or os.cpu_count() or 1
    return 2 if cores >= 2 else 1


def node_names(nodes: int) -> list[str]:
    return [f"n{i}" for i in range(1, nodes + 1)]


def slurm_conf(host: str, nodes: int, cpus_per_node: int, memory_mb: int, fast_faults: bool = False) -> str:
    """slurm.conf of a cluster of ``nodes`` slurmd on this host, each with ``cpus_per_node`` CPUs.

    ``fast_faults``: timeouts for fault tests (Slurm 22.05.8, measured here): a lost node is DOWN 9-10 s
    after its loss and its batch job runs again on the other node 15-16 s after it; ``scontrol requeue``d
    jobs run again 6 s after. slurmctld pings the nodes every SlurmdTimeout/3 s; a ping of a dead
    slurmd fails only after retrying the connection for MessageTimeout s (10 at most), and the node is
    set DOWN at the second failed ping once its last answer is SlurmdTimeout old: with SlurmdTimeout=5,
    MessageTimeout=2 gives DOWN in 9 s (3: 12 s; the default 10: 26 s). MessageTimeout also bounds
    every RPC, and clients (squeue, sbatch) give up on an absent slurmctld after MessageTimeout - 1 s.
    AuthInfo=cred_expire=5, the least Slurm accepts: a requeued job (node failure or ``scontrol
    requeue``) gets BeginTime = requeue + cred_expire + 1 s (default 120). sched_interval=1,
    bf_interval=1: nothing else wakes the scheduler when that BeginTime passes (it would wait for the
    next full pass, every 60 s, or backfill, every 30 s). JobRequeue=1 (Slurm's default, written out):
    batch jobs are requeued on node failure unless submitted with --no-requeue.
    """
    sched = "batch_sched_delay=0" + (",sched_interval=1,bf_interval=1" if fast_faults else "")
    lines = [
        f"# written by perfsweep.cluster.local_slurm: {nodes} node(s) of {cpus_per_node} CPU(s) on {host}",
        "ClusterName=perfsweep",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"StateSaveLocation={STATE}/ctld",
        f"SlurmdSpoolDir={STATE}/d-%n",
        f"SlurmctldPidFile={CTLD_PID}",
        f"SlurmdPidFile={STATE}/slurmd-%n.pid",
        f"SlurmctldLogFile={STATE}/slurmctld.log",
        f"SlurmdLogFile={STATE}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "SchedulerType=sched/backfill",
        # start the next job when one ends, not up to 3 s later (the default delay is for clusters that
        # take many submissions a second; here the two one-CPU nodes stood idle between short run jobs)
        f"SchedulerParameters={sched}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "EnforcePartLimits=ALL",
        "DefMemPerCPU=1000",
        "SlurmdParameters=config_overrides",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MinJobAge=600",
        "SlurmctldTimeout=30",
        f"SlurmdTimeout={5 if fast_faults else 30}",
        "InactiveLimit=0",
        "KillWait=5",
        *(["MessageTimeout=2", "AuthInfo=cred_expire=5", "JobRequeue=1"] if fast_faults else []),
        # the nodes are one host: Open MPI's mpirun binds each node's ranks from its core 0 on, so the
        # ranks of n1 and n2 would share core 0 (a 2-node allreduce loop took 1.20 s, unbound 0.048 s)
        f"TaskProlog={TASK_PROLOG}",
    ]
    for i, name in enumerate(node_names(nodes)):
        lines.append(f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={BASE_PORT + i + 1} "
                     f"CPUs={cpus_per_node} RealMemory={memory_mb} State=UNKNOWN")
    names = ",".join(node_names(nodes))
    lines.append(f"PartitionName={PARTITION} Nodes={names} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO")
    return "\n".join(lines) + "\n"


def _program(name: str) -> str:
    """The program behind a name of started.json: slurmd-n1 -> slurmd."""
    return name.split("-")[0]


def _alive(pid: int | None, program: str) -> bool:
    """Whether ``pid`` is a live (not zombie) process of ``program``. A pid in a file left by a killed
    session or from before a reboot may since belong to another process: that one is not ours."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:][:1]
    return comm == program[:15] and state != "Z"


def _pid_of(pidfile: Path) -> int | None:
    """The live process behind a daemon's pid file (named after its program), else None."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _alive(pid, _program(pidfile.name.split(".")[0])) else None


def _started() -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads(STARTED.read_text()).items()}
    except (FileNotFoundError, ValueError):
        return {}


def _remember(name: str, pid: int) -> None:
    started = _started()
    started[name] = pid
    STATE.mkdir(parents=True, exist_ok=True)
    STARTED.write_text(json.dumps(started, indent=1, sort_keys=True))


def _wait_for_pidfile(pidfile: Path, timeout: float = 10.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        pid = _pid_of(pidfile)
        if pid:
            return pid
        time.sleep(0.05)
    raise RuntimeError(f"no process behind {pidfile} after {timeout:.0f} s; see {STATE}/*.log")


def _start_munge() -> None:
    if _pid_of(MUNGED_PID):
        return  # someone else's munged: use it, never stop it
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(os.urandom(1024))
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    for d in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        Path(d).mkdir(parents=True, exist_ok=True)
        shutil.chown(d, "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"],
                   check=True, text=True, capture_output=True)
    _remember("munged", _wait_for_pidfile(MUNGED_PID))


def start(nodes: int | None = None, timeout: float = 60.0, fast_faults: bool = False) -> dict[str, int]:
    """Start the cluster (idempotent) and return ``{node: cpus}`` once every node is idle.

    ``fast_faults``: the short timeouts of fault tests (see :func:`slurm_conf`); a start with the other
    setting restarts every daemon on the new slurm.conf. Installs nothing: call :func:`install` first
    (the command line's ``start`` does)."""
    if not installed():
        raise RuntimeError("SLURM is not installed; run `python -m perfsweep.cluster.local_slurm install` as root")
    nodes = nodes or default_nodes()
    cores = os.cpu_count() or 1
    if nodes > cores:
        raise ValueError(f"{nodes} nodes on {cores} cores: each node needs at least one core of its own")
    cpus = cores // nodes
    host = socket.gethostname()
    memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8 / nodes)
    conf = slurm_conf(host, nodes, cpus, memory, fast_faults)
    if not CONF.exists() or CONF.read_text() != conf:
        stop(quiet=True, keep_munge=True)  # after a config change every daemon must restart
        if not CONF_BEFORE.exists():  # the machine's own, put back by stop
            STATE.mkdir(parents=True, exist_ok=True)
            CONF_BEFORE.write_text(json.dumps({"text": CONF.read_text() if CONF.exists() else None}))
        CONF.parent.mkdir(parents=True, exist_ok=True)
        CONF.write_text(conf)
    (STATE / "ctld").mkdir(parents=True, exist_ok=True)
    TASK_PROLOG.write_text("#!/bin/sh\n# written by perfsweep.cluster.local_slurm: no binding of Open MPI's ranks, "
                           "whose nodes share one host's cores\necho export OMPI_MCA_hwloc_base_binding_policy=none\n")
    TASK_PROLOG.chmod(0o755)
    _start_munge()
    if not _pid_of(CTLD_PID):
        subprocess.run(["slurmctld"], check=True, text=True, capture_output=True)
        _remember("slurmctld", _wait_for_pidfile(CTLD_PID))
    for name in node_names(nodes):
        _start_slurmd(name)
    states = _wait_usable(node_names(nodes), timeout)
    print(f"local SLURM up: nodes {','.join(states)} ({cpus} CPU each), partition {PARTITION}")
    return {name: cpus for name in states}


def _start_slurmd(name: str) -> None:
    """Start the slurmd of node ``name`` unless it runs."""
    (STATE / f"d-{name}").mkdir(parents=True, exist_ok=True)
    pidfile = STATE / f"slurmd-{name}.pid"
    if not _pid_of(pidfile):
        subprocess.run(["slurmd", "-N", name], check=True, text=True, capture_output=True)
        _remember(f"slurmd-{name}", _wait_for_pidfile(pidfile))


def _wait_usable(names: list[str], timeout: float) -> dict[str, str]:
    """``{node: state}`` once every node of ``names`` is idle, mixed or allocated; a down or drained
    one is resumed (ReturnToService=2 resumes a DOWN node that registers, not a drained one)."""
    deadline = time.time() + timeout
    states: dict[str, str] = {}
    while time.time() < deadline:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True).stdout
        states = {n: s for n, s in (line.split() for line in out.splitlines() if len(line.split()) == 2)
                  if n in names}
        if len(states) == len(names) and all(s in ("idle", "mixed", "allocated") for s in states.values()):
            return states
        for name, state in states.items():
            if state.startswith(("down", "drain")):
                subprocess.run(["scontrol", "update", f"nodename={name}", "state=resume"], capture_output=True)
        time.sleep(0.5)
    raise RuntimeError(f"SLURM nodes not idle after {timeout:.0f} s ({states}); see {STATE}/*.log")


def _job_processes(name: str) -> dict[int, str]:
    """The processes of the jobs on node ``name``: ``{pid: title}`` of its slurmstepd and all their
    descendants. All nodes' slurmstepd run on this host, and a job on n1 and n2 has a "slurmstepd:
    [JOB.0]" on each, so the title does not tell the node: a node's slurmstepd is the one holding a
    socket of that node's spool dir (``d-n1/n1_JOB.STEP``). A task that left its slurmstepd's process
    tree (daemonized) is not found, as Slurm's proctrack/linuxproc does not find it either."""
    spool = f"{STATE}/d-{name}/"
    inodes = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith(spool):
            inodes.add(f"socket:[{fields[6]}]")
    procs: dict[int, tuple[int, str]] = {}  # pid: (ppid, comm)
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            if rest[0] != "Z":
                procs[int(d.name)] = (int(rest[1]), comm)
    found: dict[int, str] = {}
    for pid, (_, comm) in procs.items():
        if comm == "slurmstepd":
            try:
                fds = {os.readlink(f) for f in Path(f"/proc/{pid}/fd").iterdir()}
            except OSError:
                continue
            if fds & inodes:
                found[pid] = comm
    todo = list(found)
    while todo:  # the descendants
        parent = todo.pop()
        for pid, (ppid, comm) in procs.items():
            if ppid == parent and pid not in found:
                found[pid] = comm
                todo.append(pid)
    for pid in found:
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip() or found[pid]
        except OSError:
            pass
    return found


def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def lose_node(name: str) -> list[str]:
    """Make node ``name`` die as a lost machine does: SIGKILL its slurmd and every process of the jobs
    running on it (slurmstepd and their children; see :func:`_job_processes`), the other nodes' slurmd
    and jobs untouched. All are stopped (SIGSTOP) before any is killed, so that none reports a death
    to slurmctld, which learns of the loss only from its unanswered pings: the node goes DOWN after
    SlurmdTimeout and its batch jobs are requeued. Returns the titles of the slurmstepd killed
    ("slurmstepd: [1244.batch]"). :func:`restore_node` brings the node back."""
    slurmd = running().get(f"slurmd-{name}")
    if not slurmd:
        raise RuntimeError(f"no slurmd of node {name} started by local_slurm runs")
    _kill([slurmd], signal.SIGSTOP)
    stopped: dict[int, str] = {}
    while True:  # again until no new process: one may have forked before it was stopped
        new = {pid: t for pid, t in _job_processes(name).items() if pid not in stopped}
        if not new:
            break
        _kill(list(new), signal.SIGSTOP)
        stopped.update(new)
    _kill([slurmd, *stopped], signal.SIGKILL)
    _kill([slurmd, *stopped], signal.SIGCONT)  # a stopped process dies of SIGKILL at once; for safety
    return [t for t in stopped.values() if t.startswith("slurmstepd")]


def node_state(name: str) -> str:
    """Node ``name``'s state as sinfo shows it ("idle", "allocated*": not responding, "down*", ...;
    "" if slurmctld does not answer)."""
    return subprocess.run(["sinfo", "-h", "-N", "-n", name, "-o", "%T"], capture_output=True, text=True).stdout.strip()


def restore_node(name: str, timeout: float = 30.0) -> str:
    """Start again the slurmd of node ``name`` (after :func:`lose_node`) and return its state once
    the node is usable (idle, mixed or allocated), resuming it if slurmctld keeps it down or drained.

    Call it once :func:`node_state` is "down*" if the lost node's jobs must be requeued at once. A
    slurmd back before slurmctld set its node DOWN registers without the jobs it ran: slurmctld shows
    them RUNNING until it finds the batch job missing, about 30 s after the job's start, and only
    then requeues it."""
    _start_slurmd(name)
    return _wait_usable([name], timeout)[name]


def controller_up() -> bool:
    """Whether slurmctld answers (``scontrol ping``; blocks up to MessageTimeout while it does not)."""
    out = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    return out.returncode == 0 and " is UP" in out.stdout


def restart_controller(down: float | Callable[[], bool] = 0.0, timeout: float = 30.0) -> dict[str, str]:
    """Stop slurmctld (SIGTERM: it saves jobs, nodes and partitions in StateSaveLocation), wait
    ``down`` seconds (or, a function, until it returns true, at most ``timeout`` s), start it again on
    that state and return ``{node: state}`` once it answers and
    knows its nodes again. Running jobs go on: their slurmstepd and slurmd do not need slurmctld until
    they end. The restart takes about 0.3 s, less than a client's own retrying (MessageTimeout - 1 s),
    so squeue and sbatch fail only with a longer ``down``. The restarted slurmctld shows every node
    "unknown" and starts no job (Reason ReqNodeNotAvail) until the slurmd answer its first ping, about
    4 s later: this returns after that. Only a slurmctld that :func:`start` started is restarted."""
    pid = running().get("slurmctld")
    if not pid:
        raise RuntimeError("no slurmctld started by local_slurm runs")
    _terminate("slurmctld", pid, quiet=True)
    if callable(down):
        until = time.time() + timeout
        while not down() and time.time() < until:
            time.sleep(0.1)
    else:
        time.sleep(down)
    subprocess.run(["slurmctld"], check=True, text=True, capture_output=True)
    _remember("slurmctld", _wait_for_pidfile(CTLD_PID))
    deadline = time.time() + timeout
    states: dict[str, str] = {}
    while time.time() < deadline:
        if controller_up():
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True).stdout
            states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
            if states and not any(s.startswith("unknown") for s in states.values()):
                return states
        time.sleep(0.2)
    raise RuntimeError(f"slurmctld does not answer or know its nodes ({states}) {timeout:.0f} s after its "
                       f"restart; see {STATE}/slurmctld.log")


def _terminate(name: str, pid: int, quiet: bool) -> None:
    if not _alive(pid, _program(name)):
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not _alive(pid, _program(name)):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    if not quiet:
        print(f"stopped {name} ({pid})")


def stop(quiet: bool = False, keep_munge: bool = False) -> None:
    """Stop every daemon :func:`start` started (or :func:`restore_node`, :func:`restart_controller`
    restarted): the slurmd of each node, with the processes of the jobs left on it, slurmctld, then
    munged; and put back the slurm.conf that :func:`start` replaced (none: remove its own).
    ``keep_munge``: a restart inside :func:`start`, which keeps munged and its slurm.conf."""
    started = _started()
    order = sorted(n for n in started if n.startswith("slurmd")) + ["slurmctld"]
    if not keep_munge:
        order.append("munged")
    for name in order:
        if name in started:
            _terminate(name, started.pop(name), quiet)
        if name.startswith("slurmd-"):  # slurmd leaves its jobs' slurmstepd running: kill them too
            jobs = _job_processes(name.split("-", 1)[1])
            _kill(list(jobs), signal.SIGKILL)
            if jobs and not quiet:
                print(f"killed {len(jobs)} job process(es) of node {name.split('-', 1)[1]}")
    if started or keep_munge:
        STATE.mkdir(parents=True, exist_ok=True)
        STARTED.write_text(json.dumps(started, indent=1, sort_keys=True))
    else:
        STARTED.unlink(missing_ok=True)
    if not keep_munge and CONF_BEFORE.exists():
        before = machine_conf()
        if before is None:
            CONF.unlink(missing_ok=True)
        else:
            CONF.write_text(before)
        CONF_BEFORE.unlink()
        if not quiet:
            print(f"{CONF}: " + ("removed (there was none before start)" if before is None else "put back"))


def running() -> dict[str, int]:
    """The daemons start started that are still alive, by name."""
    return {name: pid for name, pid in _started().items() if _alive(pid, _program(name))}


def machine_conf() -> str | None:
    """The machine's own slurm.conf (None: it had none), which :func:`stop` puts back: the one
    :func:`start` replaced, also when the session that started the cluster was killed and left its
    slurm.conf and dead pids behind; else the one in place now."""
    if CONF_BEFORE.exists():
        return json.loads(CONF_BEFORE.read_text()).get("text")
    return CONF.read_text() if CONF.exists() else None


def status() -> int:
    alive = running()
    for name, pid in sorted(_started().items()):
        print(f"{name}: {'running, pid ' + str(pid) if name in alive else 'not running'}")
    if not _started():
        print("nothing started by perfsweep.cluster.local_slurm")
    if shutil.which("sinfo") and "slurmctld" in alive:
        subprocess.run(["sinfo", "-N"])
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m perfsweep.cluster.local_slurm",
                                 description="A local multi-node SLURM cluster (root, Debian).")
    ap.add_argument("action", choices=["install", "start", "stop", "status", "lose-node", "restore-node",
                                       "restart-controller"])
    ap.add_argument("node", nargs="?", help="the node of lose-node and restore-node (n1..nK)")
    ap.add_argument("--nodes", type=int, default=None, help="nodes n1..nK (default: 2 on 2+ cores)")
    ap.add_argument("--fast-faults", action="store_true",
                    help="start: the short timeouts of fault tests (a lost node's job runs again in seconds)")
    ap.add_argument("--down", type=float, default=0.0, help="restart-controller: seconds slurmctld stays stopped")
    args = ap.parse_args(argv)
    if args.action in ("lose-node", "restore-node") and not args.node:
        ap.error(f"{args.action} needs a node name, e.g. n1")
    if os.geteuid() != 0 and args.action != "status":
        print("local_slurm: must run as root (it installs packages, writes /etc/slurm and starts daemons)",
              file=sys.stderr)
        return 2
    if args.action == "install":
        install()
    elif args.action == "start":
        install()
        start(args.nodes, fast_faults=args.fast_faults)
    elif args.action == "stop":
        stop()
    elif args.action == "lose-node":
        print("\n".join(lose_node(args.node)) or f"{args.node}: no job process")
    elif args.action == "restore-node":
        print(f"{args.node}: {restore_node(args.node)}")
    elif args.action == "restart-controller":
        states = restart_controller(args.down)
        print("slurmctld restarted: " + " ".join(f"{n}={s}" for n, s in states.items()))
    else:
        return status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
