"""The built-in MPI apps perfsweep can launch, and the parameters each one understands.

Every parameter except the process count is passed to the app as ``--<name> <value>``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParamSpec:
    kind: type  # int or float
    minimum: float
    exclusive: bool  # minimum itself not allowed
    meaning: str


@dataclass(frozen=True)
class BuiltinApp:
    module: str
    params: dict[str, ParamSpec]
    checker: str | None = None  # "module:function" raising ValueError for an impossible configuration

    def check(self, params: dict) -> None:
        if self.checker:
            import importlib

            module, func = self.checker.split(":")
            getattr(importlib.import_module(module), func)(params)


PROCESSES = ParamSpec(int, 1, False, "number of MPI processes")
# the process-count parameter's default name (config key processes:), also the launcher's placeholder
PROCESS_COUNT = "p"

# what a run reports besides an app's own metrics: its time, and each rank's phases (app-report format):
# the phases an app times (apps.instrument.RankTimer.phase), the rest of the rank's time, and its total.
# Every one is collected, aggregated, modelled and drawn per rank (README: Extending perfsweep).
MEASURED_PHASES = ("init", "compute", "io", "comm")
RANK_PHASES = (*MEASURED_PHASES, "other", "total")
RUN_METRICS = ("time", *RANK_PHASES)

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
    ),
    "rmsd": BuiltinApp(
        module="perfsweep.apps.rmsd",
        params={
            "atoms": ParamSpec(int, 1, False, "atoms per frame"),
            "frames": ParamSpec(int, 1, False, "trajectory frames"),
        },
    ),
}
