"""Restart after any interruption, and repair of damaged records, before Snakemake plans a sweep.

Called by the workflow while it is parsed (``workflow/rules/run.smk``), in the main Snakemake process
only, so that the same command that was interrupted completes the sweep, with no flag::

    from perfsweep.sweep import recover
    # expected: [(record path, {study, config_id, repetition, params}), ...] for every run of the sweep
    recover.prepare(expected, "results", dry_run=recover.dry_run_requested(sys.argv[1:]))
    # = if acquire_workdir_lock(): clear_stale_state(...) (stale locks, incomplete markers), then
    #   repair_records(...) (damaged records named and set aside; with launched=, records of another
    #   launch too)

Why this is safe: every Snakemake that runs this workflow in a directory holds an exclusive ``flock``
on ``.snakemake/perfsweep.lock`` while it lives (the kernel drops it when the process dies, also on
SIGKILL). Whoever gets it knows that no other such Snakemake is alive there, so Snakemake's own
locks are stale. A run record is written atomically by the runner (temp file + rename) and the runner
holds a lock on ``.rep<k>.json.lock`` beside it while it runs, so an "incomplete" marker on a record
says nothing about the record: a run still in flight (its Snakemake was killed, the runner was not)
is waited for, a record that exists and passes :func:`perfsweep.sweep.record.check_record` is complete, and
a missing one is simply run. Incomplete derived outputs (tables, figures) inside the results
directory are removed, as ``--rerun-incomplete`` would; nothing outside it is touched.
"""

from __future__ import annotations

import base64
import datetime as _dt
import fcntl
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from perfsweep import layout
from perfsweep.errors import DamagedRecord
from perfsweep.layout import record_lock
from perfsweep.sweep.record import LEFTOVER, OTHER_LAUNCH, check_record, set_aside

def hold_lock(path: str | os.PathLike[str], wait: bool) -> int | None:
    """Take an exclusive flock on ``path``; returns its fd, or None if it is held elsewhere (no wait)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def release_lock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class HeldLocks:
    """The locks a process holds for the rest of its life (the kernel drops them when it ends, also on
    SIGKILL): the workflow's lock of its directory, taken once, and ``perfsweep run``'s lock."""

    def __init__(self) -> None:
        self.workdir: list[int] = []  # file descriptors
        self.run: list[int] = []

    def take_workdir(self, state_dir: str | os.PathLike[str]) -> bool:
        if self.workdir:
            return True
        fd = hold_lock(Path(state_dir) / "perfsweep.lock", wait=False)
        if fd is None:
            return False
        self.workdir.append(fd)
        return True

    def take_run(self, state_dir: str | os.PathLike[str]) -> bool:
        fd = hold_lock(Path(state_dir) / "perfsweep-run.lock", wait=False)
        if fd is None:
            return False
        self.run.append(fd)
        return True


HELD = HeldLocks()  # this process's


def acquire_workdir_lock(state_dir: str | os.PathLike[str] = ".snakemake") -> bool:
    """True if no other Snakemake of this workflow is alive in this directory (the lock is then held
    until this process ends)."""
    return HELD.take_workdir(state_dir)


def acquire_run_lock(state_dir: str | os.PathLike[str] = ".snakemake") -> bool:
    """True if no other ``perfsweep run`` is alive in this directory; the lock
    (``.snakemake/perfsweep-run.lock``) is then held until this process ends. Its Snakemake takes
    perfsweep.lock only once it parses the workflow, a second or more after the start: a start in that
    gap would pass :func:`workdir_busy` and meet Snakemake's own lock (which advises --unlock)."""
    return HELD.take_run(state_dir)


def workdir_busy(state_dir: str | os.PathLike[str] = ".snakemake") -> bool:
    """Whether a Snakemake of this workflow is alive in this directory (it holds the lock above)."""
    fd = hold_lock(Path(state_dir) / "perfsweep.lock", wait=False)
    if fd is None:
        return True
    release_lock(fd)
    return False


def _marker_keys(incomplete_dir: Path) -> dict[str, Path]:
    """Snakemake's incomplete markers: {output path as in the rule: marker file}."""
    keys = {}
    if not incomplete_dir.is_dir():
        return keys
    for root, _, files in os.walk(incomplete_dir):
        for name in files:
            marker = Path(root) / name
            parts = marker.relative_to(incomplete_dir).parts
            if parts and parts[0] == "migration_underway":
                continue
            encoded = "".join(part.lstrip("@") for part in parts)
            try:
                keys[base64.urlsafe_b64decode(encoded.encode()).decode()] = marker
            except (ValueError, UnicodeDecodeError):
                continue
    return keys


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def clear_stale_state(state_dir: str | os.PathLike[str], results: str | os.PathLike[str],
                      log=print) -> dict[str, int]:
    """Remove Snakemake's stale locks and make its incomplete markers harmless (call only with the
    workdir lock held). Returns counts of what was done."""
    state, results = Path(state_dir), Path(results)
    done = {"locks": 0, "waited": 0, "records_kept": 0, "derived_removed": 0}
    locks = state / "locks"
    if locks.is_dir():
        for lock in locks.glob("*.lock"):
            lock.unlink(missing_ok=True)
            done["locks"] += 1
        if done["locks"]:
            log(f"perfsweep: removed {done['locks']} stale Snakemake lock(s) of an interrupted run")
    runs = layout.runs_dir(results)
    for key, marker in _marker_keys(state / "incomplete").items():
        path = Path(key)
        if _inside(path, runs) and path.name.endswith(".json"):
            # a runner of the interrupted Snakemake may still be measuring: let it finish its record
            fd = hold_lock(record_lock(path), wait=False)
            if fd is None:
                log(f"perfsweep: {path}: waiting for the run still in flight from the interrupted sweep")
                fd = hold_lock(record_lock(path), wait=True)
                done["waited"] += 1
            release_lock(fd)
            if path.exists():
                done["records_kept"] += 1  # written atomically: complete (checked by repair_records)
            marker.unlink(missing_ok=True)
        elif _inside(path, results) and not _inside(path, runs):
            if path.is_file() or path.is_symlink():
                path.unlink()
                done["derived_removed"] += 1
            marker.unlink(missing_ok=True)
    if done["records_kept"] or done["derived_removed"]:
        log(f"perfsweep: after an interruption: {done['records_kept']} finished run record(s) kept,"
            f" {done['derived_removed']} incomplete derived file(s) removed to be rebuilt")
    return done


def repair_records(expected: Iterable[tuple[str, dict[str, Any]]], results: str | os.PathLike[str],
                   dry_run: bool = False, log=print,
                   launched: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None) -> list[str]:
    """Check every existing record; move damaged ones under ``<results>/quarantine/<time>/`` so that
    their runs are measured again. ``expected`` gives (record path, fields its path stands for:
    study, config_id, repetition, params). Returns one line per damaged record, and one per study
    with records of another launch.

    ``launched(fields, record)``: whether the sweep's launch now is the one that made the record
    (RunSpec.launched). The others (the app, its args, the launcher or the patterns its output is
    read with changed, not where the Python or mpiexec live; a timeout or retries since raised) move under
    ``<results>/superseded/<time>/`` and are measured again, as ``perfsweep plan`` counts them.
    Snakemake's params trigger sees a changed launch only where its metadata for the record's path
    exists: not in a copied results directory or after ``.snakemake`` was removed (it ran nothing
    there while plan said they would run again), and never a raised timeout or retries (no params)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    lines = []
    superseded: dict[str, int] = {}
    for path, fields in expected:
        if not os.path.lexists(path):
            continue
        try:
            record = check_record(path, **fields)
        except DamagedRecord as exc:
            if dry_run:
                line = f"perfsweep: damaged record {exc}; would be set aside and measured again"
            else:
                target = set_aside(path, results, stamp)
                line = f"perfsweep: damaged record {exc}; moved to {target}, measured again"
            lines.append(line)
            log(line)
            continue
        if launched is not None and not launched(fields, record):
            if not dry_run:
                set_aside(path, results, stamp, folder=layout.SUPERSEDED)
            superseded[fields["study"]] = superseded.get(fields["study"], 0) + 1
    for study, count in superseded.items():
        where = layout.set_aside_dir(results, layout.SUPERSEDED, stamp)
        line = (f"perfsweep: study {study}: {count} record(s) {OTHER_LAUNCH} "
                + (f"would be set aside under {layout.named(layout.SUPERSEDED)} and measured again" if dry_run
                   else f"moved under {where}, measured again"))
        lines.append(line)
        log(line)
    return lines


def set_aside_leftovers(results: str | os.PathLike[str], dry_run: bool = False, log=print) -> list[str]:
    """Move the temporary files of record writes that a crash cut short (layout.leftover_temps, under
    ``runs/`` and ``archive/``) under ``<results>/quarantine/<time>/``, one line each; not those of a run
    whose runner is still writing (it holds the record's lock). Returns the lines."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    lines = []
    for tmp, record in layout.leftover_temps(results):
        fd = hold_lock(record_lock(record), wait=False)
        if fd is None:
            continue  # its runner is writing it now
        release_lock(fd)
        where = "would be set aside" if dry_run else f"moved to {set_aside(tmp, results, stamp)}"
        lines.append(f"perfsweep: {tmp}: {LEFTOVER}; {where}")
        log(lines[-1])
    return lines


def reopen_bundles(expected: Iterable[tuple[str, dict[str, Any]]], results: str | os.PathLike[str],
                   dry_run: bool = False, log=print,
                   manifest_of: Callable[[dict[str, Any]], str] | None = None) -> list[str]:
    """With ``bundle: repetitions`` only a configuration's manifest (``<results>/bundles/<study>/<config>.txt``)
    is a Snakemake output: where one of its records is missing (deleted, or set aside as damaged), the
    manifest is set aside too, so that the bundle runs again. Returns one line per study with
    reopened bundles (after a changed launch that is every bundle of the study). ``manifest_of``: the
    manifest of a record's job where it is not its configuration's (``bundle: packs``: its pack's)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    reopened: dict[str, dict[str, str]] = {}  # study -> {config id: its first missing record}
    for path, fields in expected:
        if os.path.lexists(path):
            continue
        manifest = Path(manifest_of(fields) if manifest_of else layout.bundle_manifest(results, fields["study"], fields["config_id"]))
        bundles = reopened.setdefault(fields["study"], {})
        if str(manifest) in bundles or not manifest.exists():
            continue
        if not dry_run:
            set_aside(manifest, results, stamp)
        bundles[str(manifest)] = path
    lines: list[str] = []
    for study, bundles in reopened.items():
        if bundles:
            first = next(iter(bundles.values()))
            lines.append(f"perfsweep: study {study}: {len(bundles)} bundle(s) with a missing record (the first: "
                         f"{first}) {'would run' if dry_run else 'run'} again")
            log(lines[-1])
    return lines


def prepare(expected: list[tuple[str, dict[str, Any]]], results: str, state_dir: str = ".snakemake",
            dry_run: bool = False, bundles: bool = False,
            launched: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None,
            manifest_of: Callable[[dict[str, Any]], str] | None = None) -> None:
    """What the workflow calls while it is parsed in the main Snakemake process."""
    def log(line: str) -> None:
        sys.stderr.write(line + "\n")

    if not acquire_workdir_lock(state_dir):
        return  # another Snakemake of this workflow is alive here: its state is not stale
    if not dry_run:
        clear_stale_state(state_dir, results, log=log)
    set_aside_leftovers(results, dry_run=dry_run, log=log)
    repair_records(expected, results, dry_run=dry_run, log=log, launched=launched)
    if bundles:
        reopen_bundles(expected, results, dry_run=dry_run, log=log, manifest_of=manifest_of)


def dry_run_requested(argv: list[str]) -> bool:
    """Whether this Snakemake was asked for a dry run (``-n``) or to touch outputs: then nothing is
    moved. Snakemake only knows it after parsing the workflow, so its own argument parser is asked."""
    try:
        from snakemake.cli import get_argument_parser  # heavy: only the workflow's main process asks

        args, _ = get_argument_parser().parse_known_args(argv)
        return bool(getattr(args, "dryrun", False) or getattr(args, "touch", False))
    except (Exception, SystemExit):
        return any(a in ("-n", "--dry-run", "--dryrun", "-t", "--touch") for a in argv)
