"""A pack's job (config ``bundle: packs``, perfsweep.sweep.packs): its runs one after the other in one
allocation, a record for each as it finishes.

    python -m perfsweep.runner --pack <results>/packs/<pack>.json --timeout S --retries R --manifest M

A pack may be cut short at any point (time limit, a lost node, preemption, scancel, a requeue) and is then
started again: by SLURM (a requeued job), by Snakemake (the job's next attempt) or by the next ``perfsweep
run``. Each start measures only what is left:

- a run with a valid record is done and skipped;
- a run's attempts are its own, counted from the archive (perfsweep.layout.archive_name), not the pack
  job's: a run the pack never started spent none, and gets no failure record; what counts (:func:`counted`)
  are its attempts of this launch that did not succeed (a record deleted, or set aside after a changed
  launch, is measured again);
- while a run is measured its lock file (perfsweep.layout.record_lock) holds the attempt as it started;
  a start that finds it there (the runner was killed with its node, or SIGKILLed) archives that attempt
  as ``killed`` and ``lost``, with what the scheduler says ended it (``scheduler``: NODE_FAIL, a
  requeue, ...); an attempt the scheduler cut short for reasons outside the run (its node lost, its job
  requeued or preempted: :data:`NOT_THE_RUNS`) spends none of the run's attempts, every other one does
  (a runner SIGKILLed outside SLURM: the OOM killer, as perfsweep.sweep.ended rules for single runs);
  a runner that died after it archived the attempt left nothing lost: an ok attempt becomes the record;
- a run whose attempts are spent (retries + 1) without a record gets its failure record from its last
  archived attempt;
- inside SLURM a run is not started when the job has less time left than the pack's longest run so far
  needs (``squeue %L``, asked at most once a minute: :class:`TimeLeft`): the pack stops before its time
  limit and its next start goes on.

Each record names its pack and its place in it (``pack``: id, index, of) and the scheduler's story of
the attempt (``scheduler``: job id, restarts, state, reason). Exit 0 once every run has its record (the
manifest is written), 1 when the pack should be started again (a failed run has attempts left, or the
pack stopped before its time limit), 128 + signal when it was interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfsweep import __version__, layout
from perfsweep.atomic import write_json_atomic
from perfsweep.cluster import scheduler
from perfsweep.cluster.launch import expand_hostlist
from perfsweep.errors import Interrupted, RunFailed
from perfsweep.sweep.packs import read_pack_file
from perfsweep.sweep.record import archive_copy
from perfsweep.sweep.recover import hold_lock, release_lock
from perfsweep.sweep.run import (_finished_elsewhere, _now, _raise_interrupted, _write_manifest, become_subreaper,
                                 execute)
from perfsweep.sweep.spec import RunSpec

MARGIN = 10.0  # seconds a run needs at least before the time limit, beside 1.5 x the longest run so far
ASK_EVERY = 60.0  # seconds: the most a pack counts squeue's answer down before it asks again


class TimeLeft:
    """The job's time left before each run of a pack, without an RPC to the controller per run (one a run
    is what a rate-limited controller counts, and a pack may run thousands): squeue's last answer counted
    down by the clock. squeue is asked again when that count says the next run does not fit, so a stop
    always rests on a fresh answer, and ASK_EVERY seconds after the last answer, so a limit an admin
    changed shows within a minute. No limit (None) is kept as long."""

    def __init__(self) -> None:
        self._answer: tuple[float, float | None] | None = None  # (time.monotonic() when asked, seconds left)

    def __call__(self, need: float) -> float | None:
        if self._answer is not None:
            asked, left = self._answer
            since = time.monotonic() - asked
            if since < ASK_EVERY and (left is None or left - since >= need):
                return None if left is None else left - since
        left = scheduler.time_left()
        self._answer = (time.monotonic(), left)
        return left


# an attempt the scheduler cut short for reasons outside the run: it spends none of the run's attempts
NOT_THE_RUNS = ("NODE_FAIL", "REQUEUED", "PREEMPTED", "BOOT_FAIL", "REQUEUE_FED", "REQUEUE_HOLD")


def archived_attempts(spec: RunSpec) -> list[dict[str, Any]]:
    """This run's archived attempts, oldest first."""
    out = []
    for path in sorted(Path(spec.archive_dir).glob(layout.archive_name(spec.repetition, "*")),
                       key=lambda p: p.name.split(".", 2)[2]):  # by time stamp
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out


def spent(attempt: dict[str, Any], now: dict[str, Any] | None = None) -> bool:
    """Whether an archived attempt spent one of the run's attempts: every one but a local attempt that was
    interrupted (Ctrl-C: ``killed`` outside SLURM, which ended nothing of the app's) and one the scheduler
    cut short for reasons outside the run (:data:`NOT_THE_RUNS`: its node lost, its job requeued or
    preempted). ``now``: the story of the job this start runs in; an attempt killed in the same job
    before its latest restart was cut short by a requeue, whatever the controller could say then."""
    if attempt.get("status") != "killed":
        return True
    story = attempt.get("scheduler") or {}
    if not attempt.get("slurm") and not story:
        return bool(attempt.get("lost"))  # a runner killed outright (SIGKILL, OOM), found later: spent
    if (now and story.get("job_id") == now.get("job_id") and isinstance(story.get("restarts"), int)
            and isinstance(now.get("restarts"), int) and now["restarts"] > story["restarts"]):
        return False
    return story.get("state") not in NOT_THE_RUNS


def _started(lock: Path) -> dict[str, Any] | None:
    """The attempt a killed runner left in the run's lock file (None: the file is empty, no attempt)."""
    try:
        text = lock.read_text()
    except OSError:
        return None
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def _mark(lock: Path, record: dict[str, Any] | None) -> None:
    """Write the attempt as it starts into the run's lock file (or empty it: the attempt is archived)."""
    with open(lock, "w", encoding="utf-8") as fh:
        if record is not None:
            json.dump(record, fh)
            fh.flush()
            os.fsync(fh.fileno())


def why_lost(started: dict[str, Any], now: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the scheduler's story, a sentence) of an attempt that a start found in flight: ``started`` is the
    attempt as it began (its ``scheduler`` story then), ``now`` this start's story."""
    before = started.get("scheduler") or {}
    job = before.get("job_id")
    if not job:
        return {}, "its runner ended without a record (killed: SIGKILL, the OOM killer, or the host went down)"
    story = dict(before)
    nodes = (started.get("slurm") or {}).get("nodelist") or before.get("nodelist")
    down = [n for n in expand_hostlist(nodes) if (scheduler.node_state(n) or "").rstrip("*~#!%$@^-").lower()
            in ("down", "drain", "drained", "fail", "failing", "down+drain", "unknown")] if nodes else []
    if job == now.get("job_id"):
        # the same job started again, and its runner left the attempt in flight: SLURM requeued the job
        # without a signal the runner could catch (a requeue by hand or a preemption sends SIGTERM first,
        # and the runner archives the attempt itself): its node was lost
        story["restarts_after"] = now.get("restarts")
        state = "NODE_FAIL"
    else:
        later = scheduler.story(job)
        state = later.get("state") or ("NODE_FAIL" if down else None)
        if later.get("reason") and later.get("reason") != "None":
            story["reason"] = later["reason"]
    story["state"] = state or "UNKNOWN"
    if down:
        story["nodes_down"] = down
    state = story["state"]
    if state == "NODE_FAIL":
        what = (f"lost with its node ({nodes}{', down now' if down else ''}): SLURM requeued job {job} "
                f"(restart {now.get('restarts')})" if job == now.get("job_id") else
                f"lost with its node ({', '.join(down) or nodes})")
    elif state == "REQUEUED":
        what = f"cut short: its job {job} was requeued while the run ran"
    elif state == "UNKNOWN":
        what = f"cut short: its job {job} ended without a record (the scheduler no longer knows why)"
    else:
        what = f"cut short: SLURM ended its job {job} ({state})"
    return story, f"attempt {started.get('attempt')} {what}"


def archive_lost(spec: RunSpec, started: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """Archive an attempt a killed runner left in flight, as ``killed`` with the scheduler's story."""
    story, why = why_lost(started, now)
    record = {**started, "finished_at": None, "status": "killed", "error": why, "returncode": None, "time": None,
              "lost": True,
              "recorded_by": f"a later start of its pack on {socket.gethostname()} ({_now()})"}
    if story:
        record["scheduler"] = story
    archive_copy(spec.archive_dir, spec.repetition, int(started.get("attempt") or 0), record)
    return record


def final_record(spec: RunSpec, used: list[dict[str, Any]], pack: dict[str, Any]) -> dict[str, Any]:
    """The record of a run whose attempts are spent: its last attempt if that failed or timed out (what
    the runner would have written), else (it was killed, or lost) a failure record with its story,
    marked ``attempts_spent`` so that it is no attempt itself."""
    last = used[-1]
    if last.get("status") in ("failed", "timeout"):
        return last
    record = {k: v for k, v in last.items() if k not in ("lost", "recorded_by")}
    return {**record, "status": "failed", "time": None, "returncode": None, "pack": pack, "attempts_spent": True,
            "error": f"attempt {last.get('attempt')} (the last) left no result: {last.get('error')}",
            "recorded_by": f"its pack's start on {socket.gethostname()} ({_now()}), its attempts spent",
            "perfsweep_version": __version__}


def counted(spec: RunSpec, attempts: list[dict[str, Any]], now: dict[str, Any]) -> list[dict[str, Any]]:
    """The attempts that spent one of the run's retries + 1: of this launch (RunSpec.launched: the same
    command, output read the same way, no timeout under a shorter timeout), not ok, not a failure record
    made when the attempts were spent, and :func:`spent`."""
    return [a for a in attempts if a.get("status") != "ok" and not a.get("attempts_spent")
            and spec.launched(a, attempts=False) and spent(a, now)]


def _same_attempt(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("attempt") == b.get("attempt") and a.get("started_at") == b.get("started_at")


def run_pack(path: str, timeout: float, retries: int, manifest: str | None) -> int:
    """Measure what is left of the pack in ``path`` (module doc); the exit code."""
    pack_id, runs, specs = read_pack_file(path)
    base = {key: RunSpec.from_json(text, timeout, retries) for key, text in specs.items()}
    pairs = [(replace(base[key], repetition=rep), out) for key, rep, out in runs]
    now = scheduler.story()
    print(f"perfsweep: pack {pack_id}: {len(pairs)} runs ({_now()}"
          + (f", SLURM job {now['job_id']}, restart {now.get('restarts', 0)}" if now else "") + ")",
          file=sys.stderr, flush=True)
    again, longest, time_left = False, 0.0, TimeLeft()
    for index, (spec, output) in enumerate(pairs):
        where = {"id": pack_id, "index": index, "of": len(pairs)}
        lock_path = layout.record_lock(output)
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        fd = hold_lock(lock_path, wait=True)
        try:
            started = _started(lock_path)
            if _finished_elsewhere(output):  # a valid record: measured (its runner may have died right after)
                if started is not None:
                    _mark(lock_path, None)
                continue
            attempts = archived_attempts(spec)
            if started is not None:  # a runner died while it measured the run
                copy = next((a for a in attempts if _same_attempt(a, started)), None)
                if copy is None:  # before it archived the attempt: lost
                    attempts.append(archive_lost(spec, started, now))
                    print(f"perfsweep: {spec.run_id}: {attempts[-1]['error']}; archived", file=sys.stderr, flush=True)
                elif copy.get("status") == "ok":  # after its archive copy, before its record: nothing lost
                    write_json_atomic(output, copy)
                    _mark(lock_path, None)
                    print(f"perfsweep: {spec.run_id}: its runner died after archiving it; record restored from the "
                          "archive", file=sys.stderr, flush=True)
                    continue
                _mark(lock_path, None)
            used = counted(spec, attempts, now)
            if len(used) >= retries + 1:
                record = final_record(spec, used, where)
                if record.get("attempts_spent"):
                    archive_copy(spec.archive_dir, spec.repetition, len(attempts) + 1, record)
                write_json_atomic(output, record)
                print(f"perfsweep: {spec.run_id}: {record['status']}: {record['error']}", file=sys.stderr, flush=True)
                continue
            need = 1.5 * longest + MARGIN
            left = time_left(need) if now else None
            if left is not None and left < need:
                print(f"perfsweep: pack {pack_id}: {left:.0f} s left of the job's time limit, too little for "
                      f"the next run (longest so far {longest:.1f} s); stopped before it, {len(pairs) - index} "
                      "runs for the pack's next start", file=sys.stderr, flush=True)
                again = True
                break
            attempt = len(attempts) + 1  # its number; len(used) + 1 of the retries + 1 it may spend
            extra = {"pack": where, **({"scheduler": now} if now else {})}
            cut = [a for a in attempts if a.get("status") == "killed" and not spent(a, now)
                   and (a.get("scheduler") or a.get("slurm"))]
            if cut:  # cut short by the scheduler, measured again: the record says by what
                extra["cut_short"] = [{"attempt": a.get("attempt"), "state": (a.get("scheduler") or {}).get("state"),
                                       "job_id": (a.get("scheduler") or {}).get("job_id")} for a in cut]
            try:
                record = execute(spec, output, attempt=attempt, raise_on_failure=len(used) + 1 <= retries, extra=extra,
                                 on_start=lambda rec: _mark(lock_path, rec))
                longest = max(longest, float(record.get("wall_time") or 0.0))
                if record["status"] != "ok":
                    print(f"perfsweep: {spec.run_id}: {record['status']}: {record['error']}", file=sys.stderr)
            except RunFailed as exc:
                print(f"perfsweep: run failed, will be retried: {exc}", file=sys.stderr)
                again = True
            except Interrupted as exc:
                print(f"perfsweep: pack {pack_id}: {spec.run_id}: terminated by signal {exc.signum}; attempt "
                      f"archived; {len(pairs) - index - 1} runs not started (no attempt spent)", file=sys.stderr)
                _mark(lock_path, None)
                return 128 + exc.signum
            _mark(lock_path, None)
        finally:
            release_lock(fd)
    if again:
        return 1
    return _write_manifest(manifest, [out for _, out in pairs])


def main(argv: list[str] | None = None) -> int:
    """``python -m perfsweep.runner --pack FILE --timeout S [--attempt A] [--retries R] [--manifest M]``
    (the entry point perfsweep/runner.py sends ``--pack`` here)."""
    for sig in (signal.SIGTERM, signal.SIGINT):  # first: a signal from here on leaves a killed record
        signal.signal(sig, _raise_interrupted)
    become_subreaper()
    ap = argparse.ArgumentParser(prog="python -m perfsweep.runner", description=main.__doc__)
    ap.add_argument("--pack", required=True, help="the pack's file (perfsweep.sweep.packs.pack_file_text)")
    ap.add_argument("--timeout", required=True, type=float, help="seconds: a run past it is killed")
    ap.add_argument("--attempt", type=int, default=1, help="the pack job's attempt (Snakemake's)")
    ap.add_argument("--retries", type=int, default=0, help="attempts after the first a failed run gets")
    ap.add_argument("--manifest", help="once every record is written, list their paths here")
    args = ap.parse_args(argv)
    print(f"perfsweep: pack job, attempt {args.attempt} ({_now()})", file=sys.stderr, flush=True)
    return run_pack(args.pack, args.timeout, args.retries, args.manifest)


def start() -> int:
    """main's exit code, or 128 + the signal that came before its runs or between them (as
    perfsweep.sweep.run.start)."""
    try:
        return main()
    except Interrupted as exc:
        return 128 + exc.signum
