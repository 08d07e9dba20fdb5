"""What the host did during a run: the record's ``host_load`` (perfsweep.sweep.run measures it per launch).

    watch = HostWatch.start()          # before the launch
    ...                                # the app runs (a child of this process, waited for)
    record["host_load"] = watch.finish(wall, processes)

Fields of ``host_load`` (every one None where the host does not say, e.g. no /proc/stat):

- ``cpu_time``: user + system CPU seconds of the launch's processes (the launcher, its proxies and the
  ranks: ``getrusage(RUSAGE_CHILDREN)`` of this process, before and after; descendants count once
  their parents waited for them);
- ``cpu_source``: ``children``, or ``ranks`` where the ranks on this host reported more CPU time (their
  ``cpu_time``; the built-in apps do): inside a SLURM job srun's ranks are not the runner's descendants;
  there, without the ranks' own report, ``cpu_wall_ratio`` and ``others_busy_share`` are None;
- ``cpu_wall_ratio``: ``cpu_time`` / (wall time x processes): about 1 for ranks that compute or
  busy-wait on cores of their own, lower when they waited for a core (or slept, or were oversubscribed);
- ``involuntary_switches``: the launch's involuntary context switches (``ru_nivcsw``): the kernel took
  a core from a rank that still wanted it;
- ``cores``: the CPUs watched (this process's affinity, the cores the run may use);
- ``others_busy_share``: the share of those cores' capacity over the run (wall x cores) that processes
  other than the run's kept busy: the busy jiffies of those cores in /proc/stat (user, nice, system,
  irq, softirq, steal) minus the run's own CPU time (and the runner's), at least 0, at most 1.

A run is disturbed where the others took more than ``variability.disturbed`` of the cores it needed:
``others_busy_share`` x ``cores`` - max(``cores`` - ``processes``, 0) > ``variability.disturbed`` x
min(``processes``, ``cores``) (perfsweep.tables.disturbed_runs; a run of 1 process on 2 cores leaves the
others a core). It is flagged in the run order, the variability table, the aggregate and the report; a
study measured until decided (config ``decide:``) whose fitted configurations have medians from
disturbed runs measures them again within its budget, and ends undecided ('host busy') if the budget is
spent before they are not (perfsweep.steps.decide).
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Any

STAT = "/proc/stat"
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system (idle iowait) irq softirq steal; guest is in user


def watched_cores() -> list[int]:
    """The CPUs this process may run on (the run's cores), else every CPU."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def busy_jiffies(cores: list[int], path: str = STAT) -> int | None:
    """The busy jiffies (since boot) of ``cores`` from /proc/stat's ``cpuN`` lines; None without them."""
    wanted = {f"cpu{c}" for c in cores}
    total, seen = 0, 0
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if parts and parts[0] in wanted:
                    values = [int(v) for v in parts[1:]]
                    total += sum(values[i] for i in BUSY_FIELDS if i < len(values))
                    seen += 1
    except (OSError, ValueError):
        return None
    return total if seen == len(wanted) else None


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


@dataclass
class HostWatch:
    cores: list[int]
    jiffies: int | None
    children: resource.struct_rusage
    own: resource.struct_rusage
    started: float

    @classmethod
    def start(cls) -> "HostWatch":
        cores = watched_cores()
        return cls(cores, busy_jiffies(cores), resource.getrusage(resource.RUSAGE_CHILDREN),
                   resource.getrusage(resource.RUSAGE_SELF), time.perf_counter())

    def finish(self, wall: float | None = None, processes: int = 1, ranks_cpu: float | None = None,
               descendants: bool = True) -> dict[str, Any]:
        """``host_load`` of the run since :meth:`start` (``wall``: its wall time, else measured here).
        ``ranks_cpu``: the CPU seconds its ranks on this host reported, counted as the run's own where
        more than its children's (``cpu_source``); ``descendants`` False: the ranks are not this process's
        descendants (inside a SLURM job, srun's ranks are slurmstepd's), so without ``ranks_cpu`` the run's
        own CPU time is not known and neither the ratio nor the others' share is given."""
        after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
        after_own = resource.getrusage(resource.RUSAGE_SELF)
        jiffies = busy_jiffies(self.cores)
        wall = wall if wall and wall > 0 else time.perf_counter() - self.started
        cpu = _cpu(after_children) - _cpu(self.children)
        own = _cpu(after_own) - _cpu(self.own)
        source = "children"
        if ranks_cpu is not None and ranks_cpu > cpu:
            cpu, source = ranks_cpu, "ranks"
        known = descendants or source == "ranks"
        out: dict[str, Any] = {
            "cpu_time": round(cpu, 4),
            "cpu_source": source,
            "cpu_wall_ratio": round(cpu / (wall * max(processes, 1)), 4) if wall > 0 and known else None,
            "involuntary_switches": after_children.ru_nivcsw - self.children.ru_nivcsw,
            "processes": processes,
            "cores": len(self.cores),
            "others_busy_share": None,
        }
        if jiffies is not None and self.jiffies is not None and wall > 0 and known:
            busy = (jiffies - self.jiffies) / os.sysconf("SC_CLK_TCK")
            others = busy - cpu - own
            out["others_busy_share"] = round(min(max(others / (wall * len(self.cores)), 0.0), 1.0), 4)
        return out


def ranks_cpu_here(ranks: list[dict[str, Any]] | None, host: str) -> float | None:
    """The CPU seconds the ranks on ``host`` reported (their ``cpu_time``); None where none did."""
    times = [r["cpu_time"] for r in ranks or [] if isinstance(r, dict) and r.get("host") == host
             and isinstance(r.get("cpu_time"), (int, float))]
    return float(sum(times)) if times else None


def rank_load(ranks: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """Per rank, where the app reports it (a rank's ``cpu_time`` beside its ``total``): the lowest
    CPU/wall ratio over the ranks and the rank that had it; None where no rank reports its CPU time."""
    ratios = [(r["cpu_time"] / r["total"], r.get("rank")) for r in ranks or []
              if isinstance(r, dict) and isinstance(r.get("cpu_time"), (int, float))
              and isinstance(r.get("total"), (int, float)) and r["total"] > 0]
    if not ratios:
        return None
    low, rank = min(ratios, key=lambda x: x[0])
    return {"min_cpu_wall_ratio": round(low, 4), "rank": rank}
