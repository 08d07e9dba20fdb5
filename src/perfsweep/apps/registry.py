"""The built-in MPI apps perfsweep can launch, and the parameters each one understands.

Every parameter except the process count is passed to the app as ``--<name> <value>``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParamSpec:
    kind: type  # int or float (an app's fixed options also str or bool)
    minimum: float
    exclusive: bool  # minimum itself not allowed
    meaning: str
    choices: tuple[str, ...] = ()  # the values a str option may take (any if empty)
    checker: str | None = None  # "module:function" raising ValueError for a value of a str option it refuses

    def check(self, value: str) -> None:
        _call(self.checker, value)


@dataclass(frozen=True)
class BuiltinApp:
    module: str
    params: dict[str, ParamSpec]  # what a study may vary (passed as --<name> <value>)
    checker: str | None = None  # "module:function" raising ValueError for an impossible configuration
    options: dict[str, ParamSpec] = field(default_factory=dict)  # app: args: (fixed; a bool is a flag)
    # the metrics it reports, name -> (unit, better: lower or higher) (perfsweep.apps.metric_kinds)
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)

    def check(self, params: dict) -> None:
        _call(self.checker, params)


def _call(checker: str | None, value) -> None:
    """Call a checker named "module:function" (none: nothing to check) with ``value``."""
    if checker:
        module, func = checker.split(":")
        getattr(importlib.import_module(module), func)(value)


PROCESSES = ParamSpec(int, 1, False, "number of MPI processes")
LJMD_STARTS = ("fluid", "lattice")  # ljmd --start: the melted lattice (cached) or the lattice itself
# the process-count parameter's default name (config key processes:), also the launcher's placeholder
PROCESS_COUNT = "p"

# what a run reports besides an app's own metrics: its time, and each rank's phases (app-report format):
# the phases an app times (apps.instrument.RankTimer.phase), the rest of the rank's time, and its total.
# Every one is collected, aggregated, modelled and drawn per rank (docs/how-to/extend.md).
MEASURED_PHASES = ("init", "compute", "io", "comm")
# the phases in which a rank waits for the others (a collective, a barrier, a wait for messages): not busy
# time. Stragglers are found on busy time (perfsweep.metrics.observables: t_busy = t_N - these phases), so
# a waiting phase left out of this list makes the ranks that waited for a slow one look slow themselves.
WAITING_PHASES = ("comm",)
RANK_PHASES = (*MEASURED_PHASES, "other", "total")
RUN_METRICS = ("time", *RANK_PHASES)
RUN_METRIC_KIND = ("s", "lower")  # each of them a time in seconds, lower is better (apps.metric_kinds)
# what a built-in app that times its phases with apps.instrument.RankTimer reports
TIMED_METRICS = {name: RUN_METRIC_KIND for name in RUN_METRICS}

BUILTIN_APPS: dict[str, BuiltinApp] = {
    "ljmd": BuiltinApp(
        module="perfsweep.apps.ljmd",
        params={
            "n": ParamSpec(int, 2, False, "number of molecules"),
            "m": ParamSpec(int, 1, False, "Lennard-Jones sites per molecule"),
            "d": ParamSpec(float, 0, True, "reduced density"),
            "c": ParamSpec(float, 0, True, "reduced cut-off radius"),
        },
        checker="perfsweep.apps.ljmd:check_params",
        metrics=TIMED_METRICS,
        options={
            "steps": ParamSpec(int, 1, False, "timed time steps"),
            "warmup": ParamSpec(int, 0, False, "untimed steps before the timed ones"),
            "dt": ParamSpec(float, 0, True, "time step"),
            "temperature": ParamSpec(float, 0, False, "reduced temperature"),
            "io-every": ParamSpec(int, 1, False, "steps between trajectory writes"),
            "threads": ParamSpec(int, 1, False, "threads per rank"),
            "seed": ParamSpec(int, 0, False, "random seed"),
            "start": ParamSpec(str, 0, False, "initial state", LJMD_STARTS),
            "release-memory": ParamSpec(bool, 0, False, "leave glibc's malloc thresholds at their defaults"),
            "out-dir": ParamSpec(str, 0, False, "where rank 0 writes trajectory and energies"),
            # a known change, so that a sweep "after" can be compared with one "before" (perfsweep compare)
            "slow-region": ParamSpec(str, 0, False, "stretch a per-step region's time: REGION=FACTOR, e.g. forces=1.2",
                                     checker="perfsweep.apps.ljmd:parse_slow_region"),
            "all-pairs": ParamSpec(str, 0, False, "an extra all-pairs pass (cost like n^2) in a region",
                                   ("neighbours", "forces", "integrate")),
        },
    ),
    "rmsd": BuiltinApp(
        module="perfsweep.apps.rmsd",
        params={
            "atoms": ParamSpec(int, 1, False, "atoms per frame"),
            "frames": ParamSpec(int, 1, False, "trajectory frames"),
        },
        metrics=TIMED_METRICS,
        options={
            "seed": ParamSpec(int, 0, False, "random seed of the generated trajectory"),
            "warmup": ParamSpec(int, 0, False, "frames analysed untimed before the timed ones"),
            "cold-reads": ParamSpec(bool, 0, False, "time the reads without first reading the block untimed"),
            "trajectory": ParamSpec(str, 0, False, "trajectory file (default: a cache file per atoms, frames, seed)"),
        },
    ),
}
