"""Failure records for runs whose SLURM job ended without one: cancelled (scancel, also while it was
pending), killed with its node, or stopped at its time limit, on the last attempt; likewise for a
local run whose runner process was killed (SIGKILL: the OOM killer). A local attempt that was
interrupted (SIGINT, SIGTERM: its archived record is ``killed``) gets no record: it is measured again.

Such a job may never start perfsweep's runner, so the runner cannot write the record itself. The run
rule therefore lets Snakemake try a run ``retries + 2`` times (workflow/rules/run.smk): attempts
1..retries+1 run the benchmark; the one after them runs nothing, asks SLURM for a single CPU and
writes the failure record here, so the study's tables and models are built from the runs that
survived and the sweep exits 0 (keep-going semantics). What ended the job is read from the archived
record of the last attempt (the runner archives an attempt interrupted by SIGTERM) and from the
plugin's job log (``.snakemake/slurm_logs/``: slurmstepd writes "CANCELLED AT ..." there, with
"DUE TO TIME LIMIT" or "DUE TO NODE FAILURE" when it was not scancel).

    python -m perfsweep.runner --timeout S --spec JSON --output FILE --attempt 3 --retries 1   # -> this module
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

from perfsweep import __version__, layout
from perfsweep.atomic import write_json_atomic
from perfsweep.cluster.launch import resolve
from perfsweep.sweep.record import RUN_SCHEMA, archive_copy
from perfsweep.sweep.recover import hold_lock, release_lock

SLURM_LOGS = Path(".snakemake") / "slurm_logs"
_CANCELLED = re.compile(r"\*\*\* (?:JOB|STEP) (\S+) ON (\S+) CANCELLED AT (\S+)(?: DUE TO ([A-Z ]+?))?(?: \*\*\*|$)")


def last_archived(archive_dir: str, repetition: int, attempt: int) -> dict[str, Any] | None:
    """The newest archived record of this run's given attempt, if the runner got to write one."""
    files = sorted(Path(archive_dir).glob(layout.archive_name(repetition, attempt)))
    return json.loads(files[-1].read_text()) if files else None


def slurm_end(spec: Any, logs: Path = SLURM_LOGS) -> tuple[str | None, str | None]:
    """(job id, slurmstepd's line) from the plugin's log of this run's previous SLURM job, if SLURM wrote
    why it ended it there, else (None, None). The plugin keeps a job's log in
    ``rule_<rule>/<wildcard values joined by _>/<job id>.log``: ``rule_run/<study>_<config>_<rep>`` for
    a run, ``rule_run_<study>/<config>`` for a bundle."""
    dirs = [logs / "rule_run" / f"{spec.study}_{spec.config_id}_{spec.repetition}",
            logs / f"rule_run_{spec.study}" / spec.config_id]
    current = os.environ.get("SLURM_JOB_ID")
    jobs = [log for d in dirs if d.is_dir() for log in d.glob("*.log") if log.stem != current]
    if not jobs:
        return None, None
    newest = max(jobs, key=lambda log: (log.stat().st_mtime, log.stem))
    for line in newest.read_text(errors="replace").splitlines():
        m = _CANCELLED.search(line)
        if m:
            return newest.stem, m.group(0).strip(" *")
    return newest.stem, None


def ended_record(spec: Any, output: str, attempt: int, bundled: bool = False) -> dict[str, Any] | None:
    """The failure record of a run whose last real attempt (``attempt - 1``) ended in SLURM, or locally
    by a signal to the runner that it could not catch (SIGKILL: the OOM killer). None for a local
    attempt that was interrupted (its archived record is ``killed``: SIGINT or SIGTERM, e.g. Ctrl-C that
    Snakemake missed): that ended nothing of the app's, the run stays to be measured. ``bundled``: the
    run was one of a bundle (``bundle: repetitions``), whose job has one log for all its runs."""
    last = attempt - 1
    prior = last_archived(spec.archive_dir, spec.repetition, last)
    job, line = slurm_end(spec)
    status = "timeout" if line and "TIME LIMIT" in line else "failed"
    local = job is None and not (prior or {}).get("slurm") and "SLURM_JOB_ID" not in os.environ
    if local and prior and prior.get("status") == "killed":
        return None
    if local:  # no SLURM: the runner's process itself was stopped (a signal, the OOM killer) or failed
        why = (f"its process was stopped ({prior.get('error') or prior.get('status')})" if prior else
               f"its process ended without a record (see {layout.log_of_record(output, bundled) or 'its log'})")
    elif line:
        why = f"SLURM ended job {job}: {line}"
    elif prior:
        job = (prior.get("slurm") or {}).get("job_id") or job
        why = f"SLURM job {job} ended the run ({prior.get('error') or prior.get('status')})"
    elif job:
        why = f"SLURM job {job} ended without a record of the run (see its log {SLURM_LOGS}/.../{job}.log)"
    else:
        why = "its SLURM job ended before the run started (cancelled while pending, node failure or rejected)"
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
    record: dict[str, Any] = {
        "schema": RUN_SCHEMA, "run_id": spec.run_id, "study": spec.study, "config_id": spec.config_id,
        "repetition": spec.repetition, "parameters": spec.params, "attempt": last,
        "started_at": (prior or {}).get("started_at"), "finished_at": now,
        "launch": (prior or {}).get("launch") or {"command": resolve(spec.command), "spec_command": spec.command,
                                                  "launcher": spec.launcher, "timeout": spec.timeout},
        "host": (prior or {}).get("host"), "slurm": (prior or {}).get("slurm") or ({"job_id": job} if job else None),
        "order": (prior or {}).get("order"),  # its place in the run order, as its last attempt recorded it
        "perfsweep_version": __version__, "status": status, "time": None, "returncode": None,
        "error": f"attempt {last} (the last) left no result: {why}",
        "recorded_by": f"attempt {attempt} on {socket.gethostname()} (perfsweep.sweep.ended)",
    }
    return record


def record_ended_runs(pairs: list[tuple[Any, str]], attempt: int, bundled: bool = False) -> int:
    """Write the failure record of every run of this job that has none; archive it too. Returns 0, or 1
    if a run was interrupted locally (no record: the job fails, and the sweep's next start measures it).
    ``bundled``: the job is a bundle's (its runs share one log)."""

    rc = 0
    for spec, output in pairs:
        lock = hold_lock(layout.record_lock(output), wait=True)  # a runner still in flight finishes first
        try:
            if Path(output).exists():
                continue
            record = ended_record(spec, output, attempt, bundled)
            if record is not None:
                archive_copy(spec.archive_dir, spec.repetition, attempt, record)
                write_json_atomic(output, record)
        finally:
            release_lock(lock)
        if record is None:
            rc = 1
            print(f"perfsweep: {spec.run_id}: attempt {attempt - 1} was interrupted (a signal to its runner, e.g. "
                  "Ctrl-C); no record: run the sweep again to measure it")
        else:
            print(f"perfsweep: {spec.run_id}: {record['status']}: {record['error']}")
    return rc
