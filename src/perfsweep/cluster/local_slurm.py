"""A real SLURM cluster of several nodes on this machine, for trying and testing the cluster path.

    python -m perfsweep.cluster.local_slurm install   # Debian's slurmctld, slurmd, slurm-client, munge
    python -m perfsweep.cluster.local_slurm start [--nodes K]   # returns when every node is idle
    python -m perfsweep.cluster.local_slurm status
    python -m perfsweep.cluster.local_slurm stop      # stops every daemon start started (munged too)

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


def slurm_conf(host: str, nodes: int, cpus_per_node: int, memory_mb: int) -> str:
    """slurm.conf of a cluster of ``nodes`` slurmd on this host, each with ``cpus_per_node`` CPUs."""
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
        "SchedulerParameters=batch_sched_delay=0",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "EnforcePartLimits=ALL",
        "DefMemPerCPU=1000",
        "SlurmdParameters=config_overrides",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MinJobAge=600",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=5",
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


def start(nodes: int | None = None, timeout: float = 60.0) -> dict[str, int]:
    """Start the cluster (idempotent) and return ``{node: cpus}`` once every node is idle.

    Installs nothing: call :func:`install` first (the command line's ``start`` does)."""
    if not installed():
        raise RuntimeError("SLURM is not installed; run `python -m perfsweep.cluster.local_slurm install` as root")
    nodes = nodes or default_nodes()
    cores = os.cpu_count() or 1
    if nodes > cores:
        raise ValueError(f"{nodes} nodes on {cores} cores: each node needs at least one core of its own")
    cpus = cores // nodes
    host = socket.gethostname()
    memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8 / nodes)
    conf = slurm_conf(host, nodes, cpus, memory)
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
        (STATE / f"d-{name}").mkdir(parents=True, exist_ok=True)
        pidfile = STATE / f"slurmd-{name}.pid"
        if not _pid_of(pidfile):
            subprocess.run(["slurmd", "-N", name], check=True, text=True, capture_output=True)
            _remember(f"slurmd-{name}", _wait_for_pidfile(pidfile))
    deadline = time.time() + timeout
    states: dict[str, str] = {}
    while time.time() < deadline:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True).stdout
        states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
        if len(states) == nodes and all(s in ("idle", "mixed", "allocated") for s in states.values()):
            print(f"local SLURM up: nodes {','.join(states)} ({cpus} CPU each), partition {PARTITION}")
            return {name: cpus for name in states}
        for name, state in states.items():
            if state.startswith(("down", "drain")):
                subprocess.run(["scontrol", "update", f"nodename={name}", "state=resume"], capture_output=True)
        time.sleep(0.5)
    raise RuntimeError(f"SLURM nodes not idle after {timeout:.0f} s ({states}); see {STATE}/*.log")


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
    """Stop every daemon :func:`start` started: the slurmd of each node, slurmctld, then munged; and
    put back the slurm.conf that :func:`start` replaced (none: remove its own). ``keep_munge``: a
    restart inside :func:`start`, which keeps munged and its slurm.conf."""
    started = _started()
    order = sorted(n for n in started if n.startswith("slurmd")) + ["slurmctld"]
    if not keep_munge:
        order.append("munged")
    for name in order:
        if name in started:
            _terminate(name, started.pop(name), quiet)
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
    ap.add_argument("action", choices=["install", "start", "stop", "status"])
    ap.add_argument("--nodes", type=int, default=None, help="nodes n1..nK (default: 2 on 2+ cores)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0 and args.action != "status":
        print("local_slurm: must run as root (it installs packages, writes /etc/slurm and starts daemons)",
              file=sys.stderr)
        return 2
    if args.action == "install":
        install()
    elif args.action == "start":
        install()
        start(args.nodes)
    elif args.action == "stop":
        stop()
    else:
        return status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
