"""Run records: the raw, never-rewritten source of truth of a sweep.

One JSON file per (study, configuration, repetition). The record schema (``perfsweep.run/1``)::

    {
      "schema": "perfsweep.run/1",
      "run_id": "nm/n=200_m=1/rep0",          # study/config_id/rep<k>
      "study": "nm", "config_id": "n=200_m=1", "repetition": 0,
      "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
      "status": "ok" | "failed" | "timeout",
      "error": null | "one line saying what went wrong",
      "returncode": 0,
      "attempt": 1,                            # Snakemake attempt (retries)
      "time": 1.23,       # the measured metric: the app's own total (max over ranks), else wall time
      "wall_time": 1.45,  # launch to exit, measured by perfsweep around the launcher
      "started_at": "2026-11-22T15:40:00+00:00", "finished_at": "...",
      "launch": {"command": ["/venv/bin/mpiexec", "-n", "1", "/venv/bin/python", ...],   # as run
                 "spec_command": ["{mpiexec}", "-n", "1", "{python}", ...],   # the identity: RunSpec.launched
                 "launcher": "{mpiexec} -n 1", "cwd": "..."},
      "host": "node1", "hosts": ["node1"],
      "mpi": {"library": "MPICH", "version": "MPICH Version: 5.0.2", "standard": "4.1"},
      "slurm": null | {"job_id": "123", "nodelist": "n[1-2]", "tasks_per_node": "1(x2)", ...},
      "machine": {"cpu_model": "...", "cores": 64, "memory": bytes, "kernel": "6.1.0-..."},  # since issue 56
      "nodes": ["n1", "n2"], "ranks_per_node": {"n1": 1, "n2": 1},   # where the ranks ran
      "recorded_by": "...",   # only on the record of a run whose SLURM job ended (perfsweep.sweep.ended)
      "ranks": [ {"rank": 0, "init": s, "compute": s, "io": s, "comm": s, "other": s, "total": s,
                  "comm_ops": {"Allreduce": s}, "regions": {"step/forces": {"time": s, "visits": k}},
                  "threads": [{"thread": 0, "useful": s}, ...] (optional) }, ...],
      "metrics": {"name": value, ...},   # extra scalar metrics (regex matches of external apps)
      "warmup": {"steps": 1, "time": s},   # built-in apps: what ran untimed before the measurement
      "order": {"seed": 1, "round": 0, "position": 4, "of": 17} | null,   # perfsweep.sweep.order
      "host_load": {"cpu_time": s, "cpu_wall_ratio": 0.98, "involuntary_switches": 12, "processes": 2,
                    "cores": 2, "others_busy_share": 0.03, "ranks": {...} (optional)},   # perfsweep.sweep.host
      "stdout_tail": "...", "stderr_tail": "...",
      "perfsweep_version": "0.1.0"
    }
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from pathlib import Path
from typing import Any

from perfsweep import layout
from perfsweep.atomic import write_json_atomic
from perfsweep.errors import DamagedRecord
from perfsweep.values import format_value

RUN_SCHEMA = "perfsweep.run/1"
# records that the sweep's launch now would not make (perfsweep.sweep.spec.RunSpec.launched): plan counts
# them as still to run, the workflow sets them aside and measures them again (perfsweep.sweep.recover)
OTHER_LAUNCH = ("of another launch (app, args, launcher or output patterns since "
                "changed, or timed out under a shorter timeout, or failed with fewer attempts than retries now allows)")


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)


def study_records(results: str | os.PathLike[str], study: str,
                  damaged: set[tuple[str, int]] | None = None) -> dict[str, dict[int, dict[str, Any]]]:
    """config id -> {repetition k: record} of a study's run records (perfsweep.layout.record; in path
    order). A record that cannot be read or is not a JSON object is left out, as not measured
    (``perfsweep check-records`` names it); the records are not checked further, unless ``damaged`` (a
    set) is given: then each is checked against its path (check_record, as the workflow does before it
    sets damaged ones aside), and a damaged one is left out and its (config id, repetition) added there."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for path, config_id, repetition in layout.study_record_paths(results, study):
        try:
            rec = read_record(path) if damaged is None else check_record(path, **path_fields(path))
        except DamagedRecord:
            damaged.add((config_id, repetition))
            continue
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict):
            out.setdefault(config_id, {})[repetition] = rec
    return out


STATUSES = ("ok", "failed", "timeout")
ARCHIVED_STATUSES = (*STATUSES, "killed")  # an archived attempt may have been cut short (Ctrl-C, scancel)


def archive_copy(archive_dir: str | os.PathLike[str], repetition: int, attempt: int, record: dict[str, Any]) -> Path:
    """Keep an attempt's record in its configuration's archive (perfsweep.layout.archive_name: a unique
    name per attempt and time), atomically; returns its path."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = Path(archive_dir) / layout.archive_name(repetition, attempt, stamp)
    write_json_atomic(path, record)
    return path


def is_time(value: Any) -> bool:
    """A measured time: a finite number >= 0 (not a bool, not a string)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def check_record(path: str | os.PathLike[str], study: str | None = None, config_id: str | None = None,
                 repetition: int | None = None, params: dict[str, Any] | None = None,
                 statuses: tuple[str, ...] = STATUSES) -> dict[str, Any]:
    """Read a record and check it; returns it, or raises DamagedRecord with one line naming the file.

    Checked: readable UTF-8 JSON of this schema with its fields and one of ``statuses``; an ``ok`` run
    has a finite time >= 0, a wall time (where there is one) is a finite number >= 0; and, where given,
    the study, configuration, repetition and parameter values its path stands for.
    """
    def bad(what: str) -> DamagedRecord:
        return DamagedRecord(f"{path}: {what}")

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror})") from None
    if not data.strip():
        raise bad("empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"not UTF-8 (byte {data[exc.start]:#x} at offset {exc.start})") from None
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not valid JSON, truncated? ({exc.msg}, line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(rec, dict):
        raise bad(f"not a JSON object but {type(rec).__name__}")
    if rec.get("schema") != RUN_SCHEMA:
        raise bad(f"schema: {rec.get('schema')!r}, expected {RUN_SCHEMA!r}")
    for key, kind in (("run_id", str), ("study", str), ("config_id", str), ("repetition", int),
                      ("parameters", dict), ("status", str)):
        if key not in rec:
            raise bad(f"{key}: missing")
        if not isinstance(rec[key], kind) or isinstance(rec[key], bool):
            raise bad(f"{key}: {rec[key]!r} is not a {kind.__name__}")
    if rec["status"] not in statuses:
        raise bad(f"status: {rec['status']!r} is not one of {', '.join(statuses)}")
    if rec.get("wall_time") is not None and not is_time(rec["wall_time"]):
        raise bad(f"wall_time: {rec['wall_time']!r} is not a finite number >= 0")
    t = rec.get("time")
    if rec["status"] == "ok":
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise bad(f"time: {t!r} is not a number (status ok)")
        if not is_time(t):
            raise bad(f"time: {t!r} is not a finite number >= 0")
    expected = {"study": study, "config_id": config_id, "repetition": repetition}
    for key, want in expected.items():
        if want is not None and rec[key] != want:
            raise bad(f"{key}: {rec[key]!r} does not match its path ({want!r})")
    for name, want in (params or {}).items():
        have = rec["parameters"].get(name)
        if have is None or format_value(have) != format_value(want):
            raise bad(f"parameters.{name}: {have!r} does not match its configuration ({format_value(want)})")
    return rec


def leftover_temps(root: str | os.PathLike[str]) -> list[Path]:
    """Temporary files of atomic writes of run records under ``root`` (layout.LEFTOVER_GLOB, also of the
    archive's copies) that a crash left between their creation and their rename: never a record."""
    return sorted(p for p in Path(root).rglob(layout.LEFTOVER_GLOB) if p.is_file())


LEFTOVER = "a temporary file of a record's write that a crash cut short, not a record"


def set_aside(path: str | os.PathLike[str], results: str | os.PathLike[str], stamp: str,
              folder: str = layout.QUARANTINE) -> Path:
    """Move a file under ``<results>/<folder>/<stamp>/`` (same relative path); never deletes. Damaged
    files go to layout.QUARANTINE, records of another launch to layout.SUPERSEDED."""
    path, results = Path(path), Path(results)
    try:
        rel = path.resolve().relative_to(results.resolve())
    except ValueError:
        rel = Path(path.name)
    target = layout.set_aside_target(results, folder, stamp, rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while target.exists():
        target = target.with_name(f"{target.name}.{n}")
        n += 1
    os.replace(path, target)
    return target


def path_fields(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a record's path (perfsweep.layout.record) says about it, for check_record: study, config id,
    repetition and the parameter values of its config id; empty where the path does not have that form."""
    fields = layout.parse_record(path)
    if not fields:
        return {}
    params: dict[str, str] = {}
    pending = ""
    for token in fields["config_id"].split("_"):  # n=1_m=2; a parameter name may itself contain '_'
        if "=" not in token:
            pending += token + "_"
            continue
        name, value = token.split("=", 1)
        params[pending + name] = value
        pending = ""
    return {"study": fields["study"], "config_id": fields["config_id"], "repetition": fields["repetition"],
            "params": params}
