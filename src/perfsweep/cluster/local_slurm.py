"""A real single-node SLURM cluster on this machine, for trying and testing the cluster path.

    python -m perfsweep.cluster.local_slurm start     # idempotent; returns when the node is idle
    python -m perfsweep.cluster.local_slurm status
    python -m perfsweep.cluster.local_slurm stop      # by PID

Needs root and Debian's packages (installed on first start if missing): slurmctld, slurmd,
slurm-client, munge. It writes /etc/slurm/slurm.conf for this host (partition ``debug``; the plugin's
job steps clear SLURM_* variables, so the config must be at the default path), creates a munge key,
and starts munged, slurmctld and slurmd by hand (no systemd here).

Accounting: without slurmdbd, ``sacct`` answers "accounting storage is disabled", so the Snakemake SLURM
plugin must be told to poll job states with ``squeue`` (``slurm-status-command: squeue`` in
workflow/profiles/slurm) and be given an account (any name: nothing enforces it). Finished jobs stay
visible to squeue for MinJobAge seconds, longer than the plugin's polling interval.

The node declares max(4, nproc) CPUs with ``SlurmdParameters=config_overrides`` so that runs with more
processes than cores (oversubscribed, as in the default config) are scheduled instead of pending forever.
"""

from __future__ import annotations

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
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
PIDS = {"slurmctld": STATE / "slurmctld.pid", "slurmd": STATE / "slurmd.pid", "munged": Path("/run/munge/munged.pid")}


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def install() -> None:
    if all(shutil.which(x) for x in ("slurmctld", "slurmd", "sinfo", "munged")):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES], check=True, env=env)


def slurm_conf(host: str, cpus: int, memory_mb: int) -> str:
    return f"""# written by perfsweep.cluster.local_slurm: a single-node cluster on {host}
ClusterName=perfsweep
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={STATE}/ctld
SlurmdSpoolDir={STATE}/d
SlurmctldPidFile={PIDS['slurmctld']}
SlurmdPidFile={PIDS['slurmd']}
SlurmctldLogFile={STATE}/slurmctld.log
SlurmdLogFile={STATE}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


def _alive(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        return None


def _start_munge() -> None:
    if _alive(PIDS["munged"]):
        return
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(os.urandom(1024))
    shutil.chown(key, "munge", "munge")
    key.chmod(0o400)
    for d in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        Path(d).mkdir(parents=True, exist_ok=True)
        shutil.chown(d, "munge", "munge")
    _run(["runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force"])


def start(timeout: float = 60.0) -> None:
    install()
    host = socket.gethostname()
    cpus = max(4, os.cpu_count() or 1)
    memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8)
    conf = slurm_conf(host, cpus, memory)
    changed = not CONF.exists() or CONF.read_text() != conf
    for d in (STATE / "ctld", STATE / "d"):
        d.mkdir(parents=True, exist_ok=True)
    if changed:
        CONF.parent.mkdir(parents=True, exist_ok=True)
        CONF.write_text(conf)
        stop(quiet=True)  # after a config change both daemons must restart
    _start_munge()
    if not _alive(PIDS["slurmctld"]):
        _run(["slurmctld"])
    if not _alive(PIDS["slurmd"]):
        _run(["slurmd"])
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True)
        state = proc.stdout.strip()
        if state in ("idle", "mixed", "allocated"):
            print(f"local SLURM up: node {host}, {cpus} CPUs, partition debug ({state})")
            return
        if state.startswith(("down", "drain")):
            subprocess.run(["scontrol", "update", f"nodename={host}", "state=resume"], capture_output=True)
        time.sleep(0.5)
    raise RuntimeError(f"SLURM node not idle after {timeout:.0f} s (state {state!r}); see {STATE}/*.log")


def stop(quiet: bool = False) -> None:
    for name in ("slurmd", "slurmctld"):
        pid = _alive(PIDS[name])
        if pid:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if not _alive(PIDS[name]):
                    break
                time.sleep(0.1)
            if not quiet:
                print(f"stopped {name} ({pid})")


def status() -> int:
    for name, pidfile in PIDS.items():
        print(f"{name}: {'running, pid ' + str(_alive(pidfile)) if _alive(pidfile) else 'not running'}")
    if shutil.which("sinfo"):
        subprocess.run(["sinfo"])
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["start"], ["stop"], ["status"]):
        print("usage: python -m perfsweep.cluster.local_slurm start|stop|status", file=sys.stderr)
        return 2
    if os.geteuid() != 0 and argv[0] != "status":
        print("local_slurm: must run as root (it writes /etc/slurm and starts daemons)", file=sys.stderr)
        return 2
    {"start": start, "stop": stop, "status": status}[argv[0]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
