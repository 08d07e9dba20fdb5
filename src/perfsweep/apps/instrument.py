"""Per-rank timing instrumentation shared by the built-in MPI apps.

An app creates one :class:`RankTimer` per rank, wraps its phases in ``timer.phase(kind)`` and its
code regions in ``timer.region(name)``, times each collective with ``timer.comm(op)`` and at the end
calls :func:`write_app_report`, which gathers every rank's timings to rank 0 and writes one JSON file
atomically. Usage::

    timer = RankTimer()
    with timer.phase("init"):
        setup()
    for step in range(steps):
        with timer.phase("compute"), timer.region("forces"):
            f = forces(x)
        with timer.comm("Allreduce"):
            comm.Allreduce(f_local, f)
    write_app_report(comm, timer, path, app="ljmd", parameters={...})

Phase kinds (``apps.registry.MEASURED_PHASES``: init, compute, io, comm) are columns of the per-rank table; ``total``
is the wall time from the timer's creation to the report. Anything not inside a phase is ``other``.
Regions are slash-separated paths (``step/forces``) whose inclusive times may overlap the phases.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from perfsweep.apps.registry import MEASURED_PHASES
from perfsweep.atomic import write_json_atomic

PHASES = MEASURED_PHASES  # the phase kinds (one list: apps.registry)
APP_REPORT_SCHEMA = "perfsweep.app-report/1"


def cache_dir() -> Path:
    """Where the built-in apps keep the inputs they make once (rmsd's trajectories, ljmd's fluid starts):
    $PERFSWEEP_CACHE, else perfsweep-cache in the temporary directory."""
    return Path(os.environ.get("PERFSWEEP_CACHE", Path(tempfile.gettempdir()) / "perfsweep-cache"))


class RankTimer:
    """Accumulates the wall time one rank spends in phases, regions and MPI collectives."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._cpu_start = time.process_time()  # the rank's CPU time (perfsweep.sweep.host.rank_load)
        self._nivcsw_start = _nivcsw()
        self.warmup_cpu = 0.0
        self.phases: dict[str, float] = {k: 0.0 for k in PHASES}
        self.comm_ops: dict[str, float] = {}
        self.regions: dict[str, float] = {}
        self.region_visits: dict[str, int] = {}
        self.threads: list[dict[str, float]] | None = None
        self._region_stack: list[str] = []
        self.warmup = 0.0  # wall time of untimed() blocks: in no phase and not in total

    @contextmanager
    def untimed(self) -> Iterator["RankTimer"]:
        """A warm-up that is not measured: its wall time is left out of ``total`` (and every phase)
        and kept as ``warmup``. Yields a scratch timer for the warm-up's own phases and regions."""
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield RankTimer()
        finally:
            self.warmup += time.perf_counter() - t0
            self.warmup_cpu += time.process_time() - c0

    @contextmanager
    def phase(self, kind: str) -> Iterator[None]:
        if kind not in self.phases:
            raise ValueError(f"unknown phase {kind!r}; expected one of {PHASES}")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[kind] += time.perf_counter() - t0

    @contextmanager
    def comm(self, op: str) -> Iterator[None]:
        """Time one MPI collective: counts as phase ``comm`` and under its operation name."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            self.phases["comm"] += dt
            self.comm_ops[op] = self.comm_ops.get(op, 0.0) + dt

    @contextmanager
    def region(self, name: str) -> Iterator[None]:
        """Time a code region; nested regions get paths like ``step/forces`` (inclusive times)."""
        path = "/".join([*self._region_stack, name])
        self._region_stack.append(name)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._region_stack.pop()
            self.regions[path] = self.regions.get(path, 0.0) + time.perf_counter() - t0
            self.region_visits[path] = self.region_visits.get(path, 0) + 1

    def elapsed(self) -> float:
        return time.perf_counter() - self._start - self.warmup

    def as_dict(self, rank: int) -> dict[str, Any]:
        total = self.elapsed()
        row: dict[str, Any] = {"rank": rank, "host": socket.gethostname(), "pid": os.getpid()}
        # the SLURM node this rank runs on (several nodes may share one host, see perfsweep.cluster)
        row["node"] = os.environ.get("SLURMD_NODENAME") or row["host"]
        if hasattr(os, "sched_getaffinity"):  # the CPUs it may run on (bound to one core: one)
            row["cpus"] = sorted(os.sched_getaffinity(0))
        row.update({k: self.phases[k] for k in PHASES})
        row["other"] = max(0.0, total - sum(self.phases.values()))
        row["total"] = total
        # what the host did to this rank: its CPU seconds over the same span as total (all its threads),
        # and the times the kernel took its core while it wanted it (warm-up included)
        row["cpu_time"] = time.process_time() - self._cpu_start - self.warmup_cpu
        row["involuntary_switches"] = _nivcsw() - self._nivcsw_start
        if self.warmup:
            row["warmup"] = self.warmup
        row["comm_ops"] = dict(sorted(self.comm_ops.items()))
        row["regions"] = {
            k: {"time": self.regions[k], "visits": self.region_visits[k]} for k in sorted(self.regions)
        }
        if self.threads is not None:
            row["threads"] = self.threads
        return row


def mpi_library() -> dict[str, str]:
    """Name and version of the MPI library mpi4py is running on."""
    from mpi4py import MPI  # MPI_Init on first import: only inside a launched app, never at import

    text = MPI.Get_library_version().strip()
    first = text.splitlines()[0] if text else ""
    name = "unknown"
    for candidate in ("MPICH", "Open MPI", "Intel(R) MPI", "MVAPICH", "Cray MPICH"):
        if candidate.lower() in text.lower():
            name = candidate
    major, minor = MPI.Get_version()
    return {"library": name, "version": first, "standard": f"{major}.{minor}"}


def write_app_report(
    comm: Any,
    timer: RankTimer,
    path: str | os.PathLike[str] | None,
    *,
    app: str,
    parameters: dict[str, Any],
    extra: dict[str, Any] | None = None,
    warmup: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Gather every rank's timings to rank 0 and write them as one JSON app report.

    Collective: every rank must call it. Returns the report on rank 0 and ``None`` elsewhere. With
    ``path`` None, rank 0 prints the report to stdout instead. ``warmup`` says what ran untimed before
    the measurement (e.g. ``{"steps": 1}``); its time, the longest rank's, is added.
    """
    rows = comm.gather(timer.as_dict(comm.Get_rank()), root=0)
    if comm.Get_rank() != 0:
        return None
    report: dict[str, Any] = {
        "schema": APP_REPORT_SCHEMA,
        "app": app,
        "parameters": parameters,
        "nprocs": comm.Get_size(),
        "mpi": mpi_library(),
        "hosts": sorted({r["host"] for r in rows}),
        "time": max(r["total"] for r in rows),
        "ranks": rows,
    }
    if extra:
        report["extra"] = extra
    if warmup is not None:
        report["warmup"] = {**warmup, "time": max(r.get("warmup", 0.0) for r in rows)}
    if path is None:
        print(json.dumps(report, indent=1))
    else:
        write_json_atomic(path, report)
    return report


def _nivcsw() -> int:
    """This process's involuntary context switches so far (0 where getrusage does not say)."""
    try:
        return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
    except OSError:
        return 0
