"""A run's spec, built while the workflow plans (workflow/rules/common.smk) and read by the runner that
executes it (perfsweep.sweep.run): what the run launches (command, launcher, inside a SLURM job the
cluster launcher's command), how its output is read, where its attempts are archived. Its JSON text is
a param of the run job, so a changed launch measures the run again (RunSpec.launched: which records a
spec's launch made).

    spec = RunSpec.build(sweep, sweep.study("nm").configurations()[0], repetition=0)
    spec.to_json()    # the run job's param
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from perfsweep import layout
from perfsweep.apps import scorep
from perfsweep.apps.metric_kinds import pattern_regexes
from perfsweep.apps.registry import BUILTIN_APPS, PROCESS_COUNT
from perfsweep.cluster.launch import KINDS, MPIEXEC, PYTHON, ClusterSettings, resolved_from
from perfsweep.values import Configuration, format_value

# A spec is built from the sweep (``Sweep``: a perfsweep.config.SweepConfig) in the workflow; this module does
# not import the config, which stands above the run layer (a run job loads no jsonschema or yaml).
Sweep = Any

# how a run's output is read (its time, its metrics, the timings file): recorded in the record's launch,
# so that a record read otherwise is of another launch (RunSpec.launched)
READ_WITH = ("time_pattern", "patterns", "report_path")


@dataclass
class RunSpec:
    study: str
    config_id: str
    repetition: int
    params: dict[str, Any]
    command: list[str]
    timeout: float
    archive_dir: str
    report_path: str | None = None  # timings JSON the app writes (built-in apps: a temp file)
    time_pattern: str | None = None
    patterns: dict[str, str] = field(default_factory=dict)
    launcher: str = ""
    profile: str | None = None  # Score-P profile of an external app (perfsweep.apps.scorep)
    # inside a SLURM job: {"command": [...], "kind": "srun"|"mpich"|"openmpi"|"template"} (perfsweep.cluster.launch)
    cluster: dict[str, Any] | None = None
    retries: int = 0  # attempts after the first a failed run gets (the runner gets them as --retries)

    def to_json(self) -> str:
        """Deterministic text (sorted keys): Snakemake compares it to decide whether a run is stale. The
        timeout and the retries are not in it (the runner gets them as ``--timeout`` and ``--retries``):
        raising them measures again only the runs that hit a shorter timeout or failed with fewer attempts
        (:meth:`launched`), not the whole sweep."""
        data = dict(vars(self))  # the fields are plain JSON (asdict copies: slow)
        del data["timeout"], data["retries"]
        if data["profile"] is None:  # specs without a profile keep their text (no reruns)
            del data["profile"]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, timeout: float, retries: int = 0) -> "RunSpec":
        return cls(**json.loads(text), timeout=timeout, retries=retries)

    @property
    def run_id(self) -> str:
        return f"{self.study}/{self.config_id}/rep{self.repetition}"

    def launched(self, record: dict[str, Any], attempts: bool = True) -> bool:
        """Whether a run record's launch (``launch``, as :func:`execute` records it) is the one this spec
        makes: its command as the spec gives it (``spec_command``: where the Python and mpiexec live is no
        part of it; a record made before it: its ``command``, the spec's resolved wherever), or inside a
        SLURM job the cluster launcher's, with a built-in app's ``--report`` file (a temp file per run)
        aside; its output read as this spec reads it (:data:`READ_WITH`); not a timeout under a shorter
        timeout than this spec's (``launch.timeout``; records made before it was recorded: their wall
        time); and not a failure with fewer attempts than this spec's retries allow (its last ``attempt``
        < retries + 1; ``attempts=False`` leaves that out: an archived attempt of the launch, which a
        pack counts among the run's attempts, perfsweep.sweep.pack_run)."""
        launch = record.get("launch") or {}
        command = launch.get("spec_command", launch.get("command"))
        if not isinstance(command, list):
            return False
        if any(key in launch and launch[key] != getattr(self, key) for key in READ_WITH):
            return False  # its output was read with other patterns (records before 2026-11-26: not known)
        if record.get("status") == "timeout":
            limit = launch.get("timeout", record.get("wall_time"))
            if isinstance(limit, (int, float)) and limit < self.timeout:
                return False
        if attempts and record.get("status") in ("failed", "timeout") and isinstance(record.get("attempt"), int):
            if record["attempt"] < self.retries + 1:
                return False
        if self.report_path == "{report}" and command[-2:-1] == ["--report"]:
            command = command[:-2]
        commands = [c for c in (self.command, (self.cluster or {}).get("command")) if c]
        if "spec_command" not in launch:
            return any(resolved_from(command, c) for c in commands)
        return command in commands

    @classmethod
    def build(cls, sweep: Sweep, cfg: Configuration, repetition: int) -> "RunSpec":
        study, config_id, params = cfg.study, cfg.config_id, cfg.params
        archive = layout.archive_dir(sweep.results, study, config_id)
        fmt = {k: format_value(v) for k, v in params.items()}
        launcher = launcher_prefix(sweep.launcher, fmt, sweep.processes)
        app = sweep.study(study).app
        cluster = cluster_launch(sweep, params, fmt)

        def assemble(prefix: list[str]) -> list[str]:
            if "name" in app:
                command = [*prefix, PYTHON, "-m", BUILTIN_APPS[app["name"]].module]
                for name, value in params.items():
                    if name != sweep.processes:
                        command += [f"--{name}", fmt[name]]
                for name, value in sorted(app.get("args", {}).items()):  # a bool is a flag (config_fields.check_args)
                    command += [f"--{name}"] if value is True else [] if value is False else [f"--{name}", format_value(value)]
                return command
            escaped = " ".join(shlex.quote(a) for a in prefix).replace("{", "{{").replace("}", "}}")  # MPIEXEC's
            text = app["command"].replace("{launcher}", escaped)
            return shlex.split(text.format(**fmt))

        cluster["command"] = cluster.pop("settings").wrap(assemble(cluster["prefix"]))
        del cluster["prefix"]
        if "name" in app:
            return cls(study, config_id, repetition, params, assemble(launcher), sweep.timeout, archive,
                       report_path="{report}", launcher=" ".join(launcher), cluster=cluster, retries=sweep.retries)
        report = app.get("timings_json")
        return cls(study, config_id, repetition, params, assemble(launcher), sweep.timeout, archive,
                   report_path=report.format(**fmt) if report else None,
                   time_pattern=app.get("time_pattern"), patterns=pattern_regexes(app.get("patterns")),
                   launcher=" ".join(launcher), cluster=cluster, retries=sweep.retries,
                   profile=scorep.profile_path(app.get("profile"), fmt, study, config_id, repetition))

    @classmethod
    def build_repetitions(cls, sweep: Sweep, cfg: Configuration, count: int) -> list["RunSpec"]:
        """The specs of a configuration's repetitions 0..count-1 (bundle mode): built once and copied
        with each repetition; a Score-P profile path may name the repetition, so those are built each."""
        first = cls.build(sweep, cfg, 0)
        if first.profile is not None:
            return [first] + [cls.build(sweep, cfg, k) for k in range(1, count)]
        return [replace(first, repetition=k) for k in range(count)]


def launcher_prefix(template: str, fmt: dict[str, str], processes: str = PROCESS_COUNT) -> list[str]:
    """Expand the launcher template; ``{mpiexec}`` stays MPIEXEC, resolved when the run starts."""
    values = dict(fmt)
    values.setdefault(PROCESS_COUNT, fmt.get(processes, "1"))
    values["mpiexec"] = MPIEXEC
    return shlex.split(template.format(**values))


def cluster_launch(sweep: Sweep, params: dict[str, Any], fmt: dict[str, str]) -> dict[str, Any]:
    """The launch prefix of this run inside a SLURM job, from the config's cluster: section."""
    settings = ClusterSettings.from_config(sweep.extra.get("cluster"))
    threads = settings.threads(params)
    prefix = settings.launcher_argv(int(params[sweep.processes]), threads, fmt)
    kind = settings.launcher if settings.launcher in KINDS else "template"
    return {"kind": kind, "threads": threads, "prefix": prefix, "settings": settings}
