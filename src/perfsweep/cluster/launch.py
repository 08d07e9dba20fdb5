"""How a run's MPI ranks are started on a SLURM cluster, and what each run asks SLURM for.

A run of p ranks is one SLURM job that asks for ``tasks = p`` (``cpus_per_task`` CPUs each, the
threads of a hybrid rank; ``nodes`` from ``cpus_per_node`` when the config gives it, else SLURM places
the tasks) and sets the executor plugin's ``mpi`` resource, so that the plugin runs the job's command
directly in the batch script instead of inside its own one-task job step. The runner then starts the
ranks with the cluster's launcher, which spreads them over the allocation's nodes:

===========  =====================================================================================
launcher     command
===========  =====================================================================================
``srun``     ``srun --mpi=pmi2 -n p [-c threads]`` (``srun_mpi: pmix`` for an Open MPI built on PMIx)
``mpich``    MPICH's ``mpiexec -n p`` (Hydra reads the allocation and starts its proxies with srun)
``openmpi``  Open MPI's ``mpirun -n p`` (reads the allocation; no MPICH-only options)
template     any text with ``{p}`` (and ``{threads}``, ``{mpiexec}``, parameters), e.g. a site wrapper
===========  =====================================================================================

Usage::

    settings = ClusterSettings.from_config(sweep.extra["cluster"])
    settings.launcher_argv(p=4, threads=1, values={"p": "4"})   # ['srun', '--mpi=pmi2', '-n', '4']
    settings.resources(p=4, threads=1, final=False)             # {'tasks': 4, 'mpi': 'srun', ...}

The plugin's job step clears the allocation's SLURM_* variables before it runs the command;
:func:`allocation_env` puts them back from ``scontrol show job`` so that mpiexec and mpirun see every
node of the allocation (srun needs only SLURM_JOB_ID).
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("srun", "mpich", "openmpi")


# A run spec names the Python of a built-in app PYTHON and a launcher's {mpiexec} MPIEXEC; the runner
# resolves both when the run starts (resolve), so that where the tools live is no part of a run's identity
# (RunSpec.launched, the run job's params): a moved checkout or a venv made again elsewhere measures
# nothing again. The run's record keeps its command both ways (launch.command, launch.spec_command).
PYTHON, MPIEXEC = "{python}", "{mpiexec}"


def resolve(command: list[str]) -> list[str]:
    """A spec's command as this process runs it: PYTHON is this Python (the one the workflow runs in),
    MPIEXEC the mpiexec installed beside it (a venv's, a conda env's), else the one on PATH."""
    mpiexec = Path(sys.executable).with_name("mpiexec")
    tools = {PYTHON: sys.executable, MPIEXEC: str(mpiexec) if mpiexec.exists() else "mpiexec"}
    return [arg.replace(PYTHON, tools[PYTHON]).replace(MPIEXEC, tools[MPIEXEC]) for arg in command]


def resolved_from(command: list[str], spec_command: list[str]) -> bool:
    """Whether ``command`` is ``spec_command`` resolved by some process (:func:`resolve`): PYTHON as a
    Python and MPIEXEC as an mpiexec wherever they lived (a record made before records kept the command
    as the spec gives it)."""
    tools = {re.escape(PYTHON): r"(?:.*/)?python[0-9.]*", re.escape(MPIEXEC): r"(?:.*/)?mpiexec"}
    if len(command) != len(spec_command):
        return False
    for arg, spec_arg in zip(command, spec_command):
        pattern = re.escape(spec_arg)
        for token, tool in tools.items():
            pattern = pattern.replace(token, tool)
        if not re.fullmatch(pattern, arg):
            return False
    return True


@dataclass(frozen=True)
class ClusterSettings:
    """The config's ``cluster:`` section (schema: perfsweep/schemas/config.schema.yaml)."""

    launcher: str = "srun"
    srun_mpi: str = "pmi2"
    mpirun: str = "mpirun"
    cpus_per_task: int | str = 1
    cpus_per_node: int | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    mem_mb_per_cpu: int | None = None
    exclusive: bool = True
    envmodules: tuple[str, ...] = ()
    setup: str | None = None
    slurm_extra: str | None = None

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> "ClusterSettings":
        section = dict(section or {})
        if "envmodules" in section:
            section["envmodules"] = tuple(section["envmodules"])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in section.items() if k in known})

    def threads(self, params: dict[str, Any]) -> int:
        """CPUs per rank: a number, or the name of the parameter that holds it."""
        value = params[self.cpus_per_task] if isinstance(self.cpus_per_task, str) else self.cpus_per_task
        return max(1, int(value))

    def launcher_argv(self, p: int, threads: int, values: dict[str, str]) -> list[str]:
        """The launch prefix for a run of p ranks with ``threads`` CPUs each, inside an allocation."""
        if self.launcher == "srun":
            argv = ["srun", f"--mpi={self.srun_mpi}", "-n", str(p)]
            # srun does not inherit the job's --cpus-per-task (SLURM >= 22.05): pass it on
            return argv + (["-c", str(threads)] if threads > 1 else [])
        if self.launcher == "mpich":
            return [MPIEXEC, "-n", str(p)]
        if self.launcher == "openmpi":
            argv = [self.mpirun, "-n", str(p)]
            return argv + (["--map-by", f"slot:PE={threads}"] if threads > 1 else [])
        fmt = dict(values, p=str(p), threads=str(threads), mpiexec=MPIEXEC)
        return shlex.split(self.launcher.format(**fmt))

    def wrap(self, command: list[str]) -> list[str]:
        """Run the setup command and load the environment modules in a login shell, then the command."""
        if not self.setup and not self.envmodules:
            return command
        script = [self.setup] if self.setup else []
        if self.envmodules:
            script.append("module load " + " ".join(shlex.quote(m) for m in self.envmodules))
        script.append('exec "$@"')
        return ["bash", "-lc", "\n".join(script), "perfsweep-launch", *command]

    def resources(self, p: int, threads: int, minutes: int, final: bool) -> dict[str, Any]:
        """SLURM resources of one run job (``minutes``: its time limit) for the executor plugin.

        ``final`` is the extra attempt after the last real one: it only writes the failure record of a
        run whose job SLURM ended (cancelled, node failure, time limit), so it asks for one CPU."""
        res: dict[str, Any] = {}
        for key, name in (("partition", "slurm_partition"), ("account", "slurm_account"), ("qos", "qos"),
                          ("constraint", "constraint"), ("mem_mb_per_cpu", "mem_mb_per_cpu")):
            if getattr(self, key) is not None:
                res[name] = getattr(self, key)
        # the plugin's mpi resource: its job step then runs our command without wrapping it in
        # `srun -n1` (which would hold the allocation's CPUs); with p = 1 it must be empty (tasks > 1 rule)
        res.update(tasks=p, cpus_per_task=threads, mpi="srun" if p > 1 else "", runtime=minutes)
        if self.cpus_per_node:
            res["nodes"] = max(1, math.ceil(p * threads / self.cpus_per_node))
        if final:
            res.update(tasks=1, cpus_per_task=1, mpi="", runtime=1, slurm_extra="")
            if self.cpus_per_node:
                res["nodes"] = 1
            return res
        extra = [self.slurm_extra] if self.slurm_extra else []
        if self.exclusive:
            extra.insert(0, "--exclusive")
        res["slurm_extra"] = " ".join(extra)
        return res


def launch_env(kind: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the launcher inside a SLURM job: the allocation restored (see module doc);
    for Open MPI as root (the local test cluster) its documented run-as-root switches."""
    env = dict(os.environ if env is None else env)
    if "SLURM_JOB_ID" in env and kind in ("mpich", "openmpi") and "SLURM_TASKS_PER_NODE" not in env:
        env.update(allocation_env(env["SLURM_JOB_ID"]))
    if kind == "openmpi" and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _count_ids(text: str) -> int:
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi) - int(lo) + 1 if hi else 1
    return n


def parse_job(text: str) -> dict[str, Any]:
    """Node list, nodes, CPUs per node group and partition from ``scontrol show job -d -o JOBID``."""
    cpus_per_task = int(re.search(r"\bCPUs/Task=(\d+)", text).group(1))
    groups = [(m.group(1), _count_ids(m.group(2)))
              for m in re.finditer(r"\bNodes=(\S+) CPU_IDs=([\d,-]+)", text)]
    partition = re.search(r"\bPartition=(\S+)", text)
    return {"nodelist": re.search(r"\bNodeList=(\S+)", text).group(1), "partition": partition and partition.group(1),
            "num_nodes": int(re.search(r"\bNumNodes=(\d+)", text).group(1)),
            "num_tasks": int(re.search(r"\bNumTasks=(\d+)", text).group(1)),
            "cpus_per_task": cpus_per_task, "groups": groups}


def expand_hostlist(hostlist: str) -> list[str]:
    """``n[1-3],x5`` -> ``['n1', 'n2', 'n3', 'x5']`` (scontrol show hostnames, without the call)."""
    names = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", hostlist):
        prefix, ranges = m.group(1), m.group(2)
        if not ranges:
            names.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{i:0{len(lo)}d}")
    return names


def allocation_env(job_id: str) -> dict[str, str]:
    """SLURM_* variables of the allocation (as sbatch sets them) from ``scontrol show job``."""
    proc = subprocess.run(["scontrol", "show", "job", "-d", "-o", job_id], capture_output=True, text=True)
    if proc.returncode != 0:
        return {}
    job = parse_job(proc.stdout)
    per_node: list[str] = []
    cpus: list[str] = []
    for group, ncpu in job["groups"]:
        n = len(expand_hostlist(group))
        per_node.append(f"{ncpu // job['cpus_per_task']}(x{n})" if n > 1 else str(ncpu // job["cpus_per_task"]))
        cpus.append(f"{ncpu}(x{n})" if n > 1 else str(ncpu))
    env = {"SLURM_JOB_NODELIST": job["nodelist"], "SLURM_NODELIST": job["nodelist"],
           "SLURM_JOB_NUM_NODES": str(job["num_nodes"]), "SLURM_NNODES": str(job["num_nodes"]),
           "SLURM_NTASKS": str(job["num_tasks"]), "SLURM_NPROCS": str(job["num_tasks"]),
           "SLURM_CPUS_PER_TASK": str(job["cpus_per_task"])}
    if job["partition"]:
        env["SLURM_JOB_PARTITION"] = job["partition"]
    if per_node:
        env["SLURM_TASKS_PER_NODE"] = ",".join(per_node)
        env["SLURM_JOB_CPUS_PER_NODE"] = ",".join(cpus)
    return env


def cpus_of_job(text: str) -> int | None:
    """The CPUs of an allocation from SLURM_JOB_CPUS_PER_NODE (``4(x2),2`` -> 10); None if unreadable."""
    total = 0
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            return None
        total += int(m.group(1)) * int(m.group(2) or 1)
    return total or None


def available_cores(env: dict[str, str] | None = None) -> int | None:
    """The CPUs a run has: inside a SLURM allocation those of the job's nodes (SLURM_JOB_CPUS_PER_NODE,
    asked of the controller where the job step cleared it; else SLURM_CPUS_ON_NODE x SLURM_NNODES),
    otherwise the CPUs this process may run on (its affinity: taskset or a cgroup narrow it)."""
    env = dict(os.environ if env is None else env)
    if "SLURM_JOB_ID" in env:
        if "SLURM_JOB_CPUS_PER_NODE" not in env:
            env.update(allocation_env(env["SLURM_JOB_ID"]))
        cpus = cpus_of_job(env.get("SLURM_JOB_CPUS_PER_NODE", ""))
        on_node, nodes = env.get("SLURM_CPUS_ON_NODE", ""), env.get("SLURM_NNODES", "1")
        if cpus is None and on_node.isdigit() and nodes.isdigit():
            cpus = int(on_node) * int(nodes)
        if cpus:
            return cpus
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count()


def placement(ranks: list[dict[str, Any]] | None, allocated: list[str]) -> dict[str, Any]:
    """Nodes of a run and its ranks per node, from the ranks' own report (``node`` per rank); without
    one (an app that reports no ranks) the allocated nodes, ranks per node unknown."""
    if not ranks:
        return {"nodes": allocated, "ranks_per_node": None}
    counts = Counter(r.get("node") or r.get("host") for r in ranks)
    return {"nodes": sorted(counts), "ranks_per_node": dict(sorted(counts.items()))}
