"""Launch one benchmark run and write its record: the only place that starts user or built-in apps.

Usage::

    from perfsweep.sweep.run import execute
    from perfsweep.sweep.spec import RunSpec
    cfg = sweep.study("nm").configurations()[0]
    spec = RunSpec.build(sweep, cfg, repetition=0)
    record = execute(spec, layout.record(sweep.results, "nm", "n=200_m=1", 0))

``execute`` always leaves a complete record: status ``ok``, ``failed`` (non-zero exit, unreadable
output) or ``timeout`` (killed after ``timeout`` seconds). Every attempt, successful or not, is also
kept in the results tree's archive (perfsweep.layout.archive_dir) with a unique name, so nothing is
lost when Snakemake removes an output before rerunning a job. With ``raise_on_failure`` (attempts
left), a failure is archived and then raised so that Snakemake retries the job.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from perfsweep import __version__
from perfsweep.apps import scorep
from perfsweep.apps.output import extract_metrics, last_lines
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.cluster import scheduler
from perfsweep.atomic import atomic_file, write_json_atomic
from perfsweep.sweep.ended import record_ended_runs
from perfsweep.cluster.launch import allocation_env, available_cores, expand_hostlist, launch_env, placement, resolve
from perfsweep.errors import DamagedRecord, Interrupted, RunFailed
from perfsweep.layout import record_lock, split_variant
from perfsweep.sweep.host import HostWatch, rank_load, ranks_cpu_here
from perfsweep.sweep.order import lookup as order_of
from perfsweep.sweep.record import RUN_SCHEMA, archive_copy, check_record, is_time
from perfsweep.sweep.recover import hold_lock, release_lock
from perfsweep.sweep.spec import READ_WITH, RunSpec

TAIL = 2000


def launch_command(spec: RunSpec) -> tuple[list[str], dict[str, str] | None]:
    """The command (unresolved: see resolve) and environment of this run: inside a SLURM job the
    cluster launcher's."""
    if "SLURM_JOB_ID" not in os.environ or not spec.cluster:
        return list(spec.command), None
    return list(spec.cluster["command"]), launch_env(spec.cluster["kind"])


def slurm_info() -> dict[str, str] | None:
    """The SLURM job this process runs in, if any."""
    if "SLURM_JOB_ID" not in os.environ:
        return None
    env = dict(os.environ)
    if "SLURM_JOB_NODELIST" not in env or "SLURM_JOB_PARTITION" not in env:  # cleared by the plugin's job
        for key, value in allocation_env(env["SLURM_JOB_ID"]).items():
            env.setdefault(key, value)  # step: asked of the controller
    keys = {"job_id": "SLURM_JOB_ID", "nodelist": "SLURM_JOB_NODELIST", "step_id": "SLURM_STEP_ID",
            "partition": "SLURM_JOB_PARTITION", "ntasks": "SLURM_NTASKS", "cluster": "SLURM_CLUSTER_NAME",
            "tasks_per_node": "SLURM_TASKS_PER_NODE", "restart_count": "SLURM_RESTART_COUNT"}
    return {k: env[v] for k, v in keys.items() if v in env}


def machine_info() -> dict[str, Any]:
    """What the history store fingerprints a host by (perfsweep.history.sweep): the CPU model, the cores
    the machine has, its memory in bytes and the kernel release."""
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    return {"cpu_model": model or platform.processor() or None, "cores": os.cpu_count(), "memory": memory,
            "kernel": platform.release() or None}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _run_process(command: list[str], timeout: float,
                 env: dict[str, str] | None = None) -> tuple[int | None, str, str, float]:
    """Run in its own process group; on timeout kill the app's whole process tree: its group and every
    descendant, also those that left the group (setsid, a daemon: under :func:`become_subreaper` they
    stay this process's descendants). Processes of the caller's own (children it had before the launch)
    are left alone. Returns (rc|None, out, err, wall)."""
    theirs = set(children(os.getpid()))  # the caller's: not the app's
    t0 = time.perf_counter()
    # bytes, decoded here: an app may print anything (non-UTF-8 bytes, binary garbage)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, _decode(out), _decode(err), time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        _kill_tree(proc, theirs)
        out, err = proc.communicate()
        _reap_orphans(theirs)
        return None, _decode(out), _decode(err), time.perf_counter() - t0
    except BaseException:
        # interrupted (SIGINT/SIGTERM from Snakemake or scancel): take the app down with us
        _kill_tree(proc, theirs)
        raise


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER): a
    helper an app started in its own session (setsid) or daemonized (its parent exited) stays under the
    runner instead of init, so that a timeout's kill finds it. Elsewhere nothing changes."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux: /proc/PID/task/TID/children); none without /proc."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return [int(c) for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except (OSError, ValueError):  # it ended, or no /proc
        return []


def descendants(pid: int) -> list[int]:
    """Every process under ``pid``, children before their own."""
    found, todo = [], [pid]
    while todo:
        below = children(todo.pop())
        found += below
        todo += below
    return found


def _the_apps(theirs: set[int]) -> list[int]:
    """What is under this process and not the caller's (``theirs``: its children before the launch, and
    what is under them): the app, what it started, and its orphans that came to this process."""
    mine = [c for c in children(os.getpid()) if c not in theirs]
    return [pid for c in mine for pid in (c, *descendants(c))]


def _kill_tree(proc: subprocess.Popen, theirs: set[int]) -> None:
    """SIGKILL to the app's process group and to every process of the app's (:func:`_the_apps`)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _kill(_the_apps(theirs))


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # it ended
            pass


def _reap_orphans(theirs: set[int], wait: float = 5.0) -> None:
    """After the app itself was reaped: kill and reap what is left of it under this process (orphans that
    came to it as their killed parents exited), until nothing is, or ``wait`` seconds passed. The
    caller's own children (``theirs``) are neither killed nor reaped."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        left = [c for c in children(os.getpid()) if c not in theirs]
        if not left:
            return
        _kill(_the_apps(theirs))
        for pid in left:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.01)


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _stat_key(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _new_record(spec: RunSpec, attempt: int, command: list[str], started_at: str | None) -> dict[str, Any]:
    """What a run's record says before its app ends: the run, the attempt and its launch: the command
    as run (``command``, resolved) and as the spec gives it (``spec_command``: :meth:`RunSpec.launched`)."""
    return {
        "schema": RUN_SCHEMA,
        "run_id": spec.run_id,
        "study": spec.study,
        **({"variant": variant} if (variant := split_variant(spec.study)[1]) else {}),  # paired measurement
        "config_id": spec.config_id,
        "repetition": spec.repetition,
        "parameters": spec.params,
        "attempt": attempt,
        "started_at": started_at,
        "launch": {"command": resolve(command), "spec_command": command, "launcher": spec.launcher,
                   "cwd": os.getcwd(), "timeout": spec.timeout,
                   **{key: getattr(spec, key) for key in READ_WITH}},
        "host": socket.gethostname(),
        "cores": available_cores(),  # the CPUs the run had: ranks beyond them are oversubscribed
        "slurm": slurm_info(),
        "machine": machine_info(),
        "perfsweep_version": __version__,
    }


def execute(spec: RunSpec, output: str | os.PathLike[str], *, attempt: int = 1,
            raise_on_failure: bool = False, extra: dict[str, Any] | None = None,
            on_start: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the spec once and write its record atomically to ``output`` (and to the archive). ``extra``:
    fields the record gets besides (a pack's: ``pack``, ``scheduler``); ``on_start`` is called with the
    record as it is when the app starts (a pack keeps it in the run's lock file: perfsweep.sweep.pack_run)."""
    with tempfile.TemporaryDirectory(prefix="perfsweep-run-") as tmp:
        report_path = spec.report_path
        command, env = launch_command(spec)
        if report_path == "{report}":  # built-in app: ask it for a timings report in a temp file
            report_path = str(Path(tmp) / "report.json")
            command += ["--report", report_path]
        # a stale timings file of an earlier run must not pass for this one's; it is not deleted (it may
        # be anywhere the config allows), the run must rewrite it
        stale = _stat_key(report_path) if report_path and report_path != "{report}" else None
        record = _new_record(spec, attempt, command, _now())
        record["order"] = order_of(output)  # its place in its round's random order (perfsweep.sweep.order)
        if "SLURM_JOB_ID" in os.environ and not (extra or {}).get("scheduler"):
            record["scheduler"] = scheduler.story()  # the job id, its restarts, its state (a pack passes its own)
        record.update(extra or {})
        if on_start is not None:
            on_start(record)
        started = time.time()
        watch = HostWatch.start()
        broke = None  # why perfsweep itself could not run or follow the app (then no exit code)
        try:
            with scorep.environment(spec.profile):
                if env is not None and spec.profile:  # the cluster launcher's environment, made before
                    env = {**env, scorep.ENV: os.environ[scorep.ENV]}
                rc, out, err, wall = _run_process(record["launch"]["command"], spec.timeout, env)
        except FileNotFoundError as exc:
            rc, out, err, wall = 127, "", f"cannot launch: {exc}", 0.0
        except Interrupted as exc:  # cancelled (scancel, Ctrl-C): keep a record of the attempt, then stop
            _archive_interrupted(exc, spec, attempt, record)
            raise
        except Exception as exc:  # a limit of the OS, a bug: the failure record says what, not a bare exit
            rc, out, err, wall = None, "", "", time.time() - started
            broke = f"perfsweep's runner failed: {type(exc).__name__}: {exc}"
        record.update(finished_at=_now(), wall_time=wall, returncode=rc,
                      stdout_tail=out[-TAIL:], stderr_tail=err[-TAIL:])
        status, error = "ok", None
        if broke:
            status, error = "failed", broke
        elif rc is None:
            status, error = "timeout", (f"killed after the timeout of {spec.timeout:g} s (config key timeout:; "
                                        f"a larger one measures it again); last lines: "
                                        f"{last_lines(out + chr(10) + err, 3)}")
        elif rc != 0:
            how = f"exit code {rc}"
            if rc < 0:
                try:
                    how = f"killed by signal {-rc} ({signal.Signals(-rc).name})"
                except ValueError:
                    how = f"killed by signal {-rc}"
            status, error = "failed", f"{how}: {last_lines(err.strip() or out, 3)}"
        else:
            try:
                if stale is not None and _stat_key(report_path) == stale:
                    raise ValueError(f"timings file {report_path} was not rewritten by this run")
                _read_results(spec, record, out, report_path, wall)
                scorep.add_profile(record, spec.profile, started)
            except (OSError, ValueError, KeyError, TypeError, IndexError, re.error) as exc:
                status, error = "failed", f"unreadable output: {exc}"
            nodelist = (record["slurm"] or {}).get("nodelist")
            record.update(placement(record.get("ranks"), expand_hostlist(nodelist) if nodelist else [record["host"]]))
        record["host_load"] = _host_load(watch, wall, spec, record.get("ranks"))
        record["status"], record["error"] = status, error
        if status != "ok":
            record["time"] = None
        record.setdefault("time", wall)

    archive = archive_copy(spec.archive_dir, spec.repetition, attempt, record)
    if status != "ok" and raise_on_failure:
        raise RunFailed(f"{spec.run_id}: {error} (record kept in {archive})")
    write_json_atomic(output, record)
    return record


def _host_load(watch: HostWatch, wall: float, spec: RunSpec, ranks: list[Any] | None) -> dict[str, Any]:
    """What the host did during the launch (perfsweep.sweep.host), for its processes: the ranks the app
    reported, else the spec's process count parameter, else 1."""
    p = spec.params.get(PROCESS_COUNT)
    processes = len(ranks) if ranks else p if isinstance(p, int) and not isinstance(p, bool) and p > 0 else 1
    # inside a SLURM job the cluster launcher's ranks are slurmstepd's children, not the runner's
    inside = "SLURM_JOB_ID" in os.environ and bool(spec.cluster)
    load = watch.finish(wall, processes, ranks_cpu_here(ranks, socket.gethostname()), descendants=not inside)
    per_rank = rank_load(ranks)
    if per_rank:
        load["ranks"] = per_rank
    return load


def _archive_interrupted(exc: Interrupted, spec: RunSpec, attempt: int, record: dict[str, Any] | None = None) -> None:
    """Archive the attempt's record (a bare one if the run had not started) as ``killed``, once per
    interruption: the attempt after the last one then knows the run was interrupted, not ended."""
    if exc.archived:
        return
    if record is None:
        record = _new_record(spec, attempt, launch_command(spec)[0], None)
    record.update(finished_at=_now(), status="killed", error=f"terminated by signal {exc.signum}",
                  returncode=None, time=None)
    if "SLURM_JOB_ID" in os.environ:  # what the scheduler says of the job now: CANCELLED, TIMEOUT, PREEMPTED ...
        before = record.get("scheduler") or {}
        story = record["scheduler"] = {**before, "state": "UNKNOWN", **scheduler.story()}  # (no answer: UNKNOWN)
        if isinstance(before.get("restarts"), int) and (story.get("restarts") or 0) > before["restarts"]:
            story["state"] = "REQUEUED"  # scontrol requeue: SIGTERM, the job already counts its next start
        if story.get("state") not in (None, "RUNNING", "COMPLETING"):
            record["error"] += f" (SLURM: {story['state']}, reason {story.get('reason')})"
    archive_copy(spec.archive_dir, spec.repetition, attempt, record)
    exc.archived = True


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def _read_results(spec: RunSpec, record: dict[str, Any], stdout: str, report_path: str | None,
                  wall: float) -> None:
    found = extract_metrics(stdout, {"time_pattern": spec.time_pattern, "patterns": spec.patterns})
    record["metrics"] = found["metrics"]
    record["time"] = wall
    if report_path:
        with open(report_path, encoding="utf-8", errors="replace") as fh:
            report = json.load(fh)
        if not isinstance(report, dict) or not isinstance(report.get("ranks"), list) or not report["ranks"]:
            raise ValueError(f"timings file {report_path}: no list of ranks")
        record["ranks"] = report["ranks"]
        record["mpi"] = report.get("mpi")
        record["hosts"] = report.get("hosts")
        if report.get("extra"):
            record["app_extra"] = report["extra"]
        if report.get("warmup"):  # what the app ran untimed before its measurement (apps.instrument)
            record["warmup"] = report["warmup"]
        t = report.get("time", max(r["total"] for r in report["ranks"]))
        if not is_time(t):
            raise ValueError(f"timings file {report_path}: time {t!r} is not a finite number >= 0")
        record["time"] = float(t)
    if found["time"] is not None:
        record["time"] = found["time"]


def main(argv: list[str] | None = None) -> int:
    """``python -m perfsweep.runner --timeout S --spec JSON --output FILE [--spec ... --output ...]
    [--attempt A --retries R]``.

    Several spec/output pairs run one after the other in this process (a bundle: e.g. the k
    repetitions of a configuration in one SLURM allocation). Exit 0 when every record was written
    (also for failed runs on their last attempt: the failure record is the result), 1 when a failed
    attempt was archived and should be retried.
    """
    for sig in (signal.SIGTERM, signal.SIGINT):  # first: a signal from here on leaves a killed record
        signal.signal(sig, _raise_interrupted)
    become_subreaper()
    ap = argparse.ArgumentParser(prog="python -m perfsweep.runner", description=main.__doc__)
    ap.add_argument("--spec", required=True, action="append", help="RunSpec as JSON (RunSpec.to_json)")
    ap.add_argument("--timeout", required=True, type=float, help="seconds: a run past it is killed")
    ap.add_argument("--output", required=True, action="append")
    ap.add_argument("--attempt", type=int, default=1)
    ap.add_argument("--retries", type=int, default=0)
    ap.add_argument("--manifest", help="bundle: once every record is written, list their paths here")
    args = ap.parse_args(argv)
    if len(args.spec) != len(args.output):
        ap.error("give one --output per --spec")
    pairs = [(RunSpec.from_json(t, args.timeout, args.retries), o) for t, o in zip(args.spec, args.output)]
    # the rule appends every attempt's stderr to the run's log: say which attempt follows
    what = (f"attempt {args.attempt} of at most {args.retries + 1}" if args.attempt <= args.retries + 1
            else "after the last attempt, which left no record")
    print(f"perfsweep: {what} ({_now()})", file=sys.stderr, flush=True)
    if args.attempt > args.retries + 1:  # after the last real attempt: SLURM ended it (run.smk)
        rc = record_ended_runs(pairs, args.attempt, bundled=args.manifest is not None)
        return rc or _write_manifest(args.manifest, args.output)
    if args.manifest and args.attempt == 1:
        # a bundle's records are not Snakemake outputs (its manifest is): clear the records of an earlier
        # execution as Snakemake clears outputs before a job (each was archived when it was written)
        for output in args.output:
            Path(output).unlink(missing_ok=True)
    retry = False
    for i, (spec, output) in enumerate(pairs):
        try:
            record = _run_one(spec, output, args.attempt, args.retries)
        except RunFailed as exc:
            print(f"perfsweep: run failed, will be retried: {exc}", file=sys.stderr)
            retry = True
            continue
        except Interrupted as exc:
            _archive_interrupted(exc, spec, args.attempt)  # (execute did, if the app had started)
            for later, _ in pairs[i + 1:]:  # a bundle's runs not started: their attempt was interrupted too
                _archive_interrupted(Interrupted(exc.signum), later, args.attempt)
            print(f"perfsweep: {spec.run_id}: terminated by signal {exc.signum}; attempt archived", file=sys.stderr)
            return 128 + exc.signum
        if record is not None and record["status"] != "ok":
            print(f"perfsweep: {spec.run_id}: {record['status']}: {record['error']}", file=sys.stderr)
    return 1 if retry else _write_manifest(args.manifest, args.output)


def _run_one(spec: RunSpec, output: str, attempt: int, retries: int) -> dict[str, Any] | None:
    """Measure one run under its record's lock; None if a runner of an interrupted sweep measured it."""
    lock = _lock_output(output)
    try:
        if _finished_elsewhere(output):
            print(f"perfsweep: {spec.run_id}: measured by a runner of an interrupted sweep; kept", file=sys.stderr)
            return None
        return execute(spec, output, attempt=attempt, raise_on_failure=attempt <= retries)
    finally:
        _release(lock)


def _write_manifest(path: str | None, outputs: list[str]) -> int:
    if path:
        with atomic_file(path, "w") as fh:
            fh.write("".join(f"{o}\n" for o in outputs))
    return 0


def _lock_output(output: str) -> int:
    """Hold the record's lock while measuring it: a restarted sweep then waits for a run that its
    killed predecessor left in flight instead of measuring it twice (perfsweep.sweep.recover)."""
    return hold_lock(record_lock(output), wait=True)


def _release(fd: int) -> None:
    release_lock(fd)


def _finished_elsewhere(output: str) -> bool:
    """Snakemake removes a job's output before it starts it; a valid record here was written since,
    by the runner of an interrupted sweep that was still in flight."""
    if not os.path.exists(output):
        return False
    try:
        check_record(output)
    except DamagedRecord:
        return False
    return True


def start() -> int:
    """What a run job runs (``python -m perfsweep.runner``, the entry point perfsweep/runner.py): main's
    exit code, or 128 + the signal that came before its runs or between them and the manifest."""
    try:
        return main()
    except Interrupted as exc:  # before its runs or between them and the manifest: nothing half-written
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(start())
