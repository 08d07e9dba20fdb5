"""``perfsweep run [CONFIG] [-- SNAKEMAKE ARGS]``: validate, then run the sweep with Snakemake on this
machine, in rounds (perfsweep.steps.rounds); Ctrl-C and SIGTERM stop it with the finished runs kept, and
the last lines say what failed and why."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfsweep import layout
from perfsweep.cli.arguments import DEFAULT_CONFIG, parse_labels, positive_int
from perfsweep.history import ENV as HISTORY_ENV
from perfsweep.config import load_config_file
from perfsweep.layout import REPO_ROOT
from perfsweep.errors import Terminated, UserError
from perfsweep.sweep.recover import acquire_run_lock, workdir_busy
from perfsweep.steps.rounds import run_rounds
from perfsweep.sweep.run import descendants
from perfsweep.tables import no_successful_run


def register(sub) -> None:
    r = sub.add_parser("run", help="run a sweep locally with Snakemake")
    r.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    r.add_argument("--cores", type=positive_int, default=None, help="cores for Snakemake (default: all)")
    r.add_argument("--no-report", action="store_true", help="skip the HTML report after the sweep")
    r.add_argument("--app-version", default=None,
                   help="the app's version or commit, kept with the sweep in the history store (config key history:)")
    r.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                   help="a label of the sweep in the history store, e.g. branch=main (repeatable)")
    r.add_argument("--stop-on-error", action="store_true",
                   help="stop at the first failed job (default: finish every other study, Snakemake --keep-going)")
    r.add_argument("--workflow", metavar="DIR", default=None,
                   help="the perfsweep checkout holding the Snakefile (default: $PERFSWEEP_WORKFLOW, else the "
                        "checkout perfsweep runs from; needed after a non-editable install)")
    r.set_defaults(func=_run, snakemake=[])


def workflow_dir(given: str | None) -> Path:
    """The perfsweep checkout whose Snakefile runs a sweep: ``given`` (--workflow), else
    $PERFSWEEP_WORKFLOW, else the checkout this package is imported from (the source tree, an editable
    install). A non-editable install (pip install ., a wheel) carries no workflow: give its checkout."""
    given = given or os.environ.get("PERFSWEEP_WORKFLOW")
    path = Path(given) if given else REPO_ROOT
    if not (path / "Snakefile").is_file():
        raise UserError(f"--workflow {given}: no Snakefile there (give the perfsweep checkout)" if given else
                        "no workflow beside this installed perfsweep: give --workflow <the perfsweep checkout, "
                        "which holds Snakefile> or set PERFSWEEP_WORKFLOW")
    return path


def _own_report(snakemake_args: list[str], default: str) -> tuple[list[str], str]:
    """The user's Snakemake arguments without a ``--report FILE`` (e.g. a .zip) and ``--report-after-run``,
    and the report to write: theirs, else ``default``. Snakemake given ``--report`` only writes a report,
    so it must come with the last start alone, not with the rounds' starts."""
    rest, report, it = [], default, iter(snakemake_args)
    for arg in it:
        if arg == "--report":
            report = next(it, None)
            if not report:
                raise UserError("perfsweep run: --report needs a file (report.html or report.zip)")
        elif arg.startswith("--report="):
            report = arg.split("=", 1)[1]
        elif arg != "--report-after-run":
            rest.append(arg)
    return rest, report


def _run(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)  # fail fast with one line, before Snakemake starts
    where = next((d for d in (Path(sweep.results), *Path(sweep.results).absolute().parents) if d.exists()), Path("."))
    if not os.access(where, os.W_OK):  # (a read-only mount, another user's results)
        raise UserError(f"{args.config}: results: {sweep.results!r} cannot be written ({where} is read-only for you)")
    if why := _cannot_write(where):  # (a full filesystem, a quota)
        raise UserError(f"{args.config}: results: {sweep.results!r} cannot be written ({why} in {where}); "
                        "free space there and run the same command again")
    snakefile = workflow_dir(args.workflow) / "Snakefile"
    base = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile),
            "--configfile", args.config]
    keep_going = [] if args.stop_on_error else ["--keep-going"]
    extra, report = _own_report(args.snakemake, layout.report_html(sweep.results))
    cmd = [*base, "--cores", str(args.cores or os.cpu_count() or 1), *keep_going, *extra]
    dry = "-n" in extra or "--dry-run" in extra
    # the report by the run of the whole workflow (with the user's targets, of what they build): one
    # Snakemake start less, each costs a DAG and the recovery scan (bench/postprocessing.py)
    after_run = [] if args.no_report or dry else ["--report", report, "--report-after-run"]

    def snakemake(targets: list[str], with_report: bool = False) -> int:
        # after "--": a user's option that takes several values (-q) must not swallow them, and they join
        # the user's own targets
        full = [*cmd, *(after_run if with_report or not targets else []), *(["--", *targets] if targets else [])]
        print("+ " + " ".join(full), flush=True)
        started = time.time()
        rc = _wait(subprocess.Popen(full))
        if rc > 0 and _interrupted(started):  # SIGINT to Snakemake alone: it stopped its jobs, as on Ctrl-C
            raise KeyboardInterrupt
        if rc < 0:  # Snakemake itself was killed (SIGKILL, the OOM killer): exit as a shell reports it
            print(f"perfsweep: Snakemake was stopped by signal {-rc}; finished runs are kept, run the same "
                  "command again to measure the rest", file=sys.stderr, flush=True)
            return 128 - rc
        return rc

    if dry:
        return snakemake([])
    store = _history_store(sweep)  # a store that cannot be used: one line before anything is measured
    labels = parse_labels(args.label)
    if not acquire_run_lock() or workdir_busy():
        raise UserError("another perfsweep run is working in this directory: wait for it to end or stop it "
                        "(Ctrl-C); Snakemake's --unlock would let both write the same records")

    rc = run_rounds(snakemake, sweep)  # again while a step (e.g. adaptive repetitions) plans more runs
    if rc == 0 and after_run:
        print(f"perfsweep: report written to {report}")
    if rc == 0 and store is not None:
        _record_history(store, sweep.results, labels, args.app_version)
    elif rc == 1 and (why := _cannot_write(Path(sweep.results) if Path(sweep.results).is_dir() else where)):
        # the runs' records and logs had no room: say why
        print(f"perfsweep: {sweep.results}: {why}: the runs could not write their records and logs (the finished "
              "ones are kept); free space there and run the same command again", file=sys.stderr)
    elif rc == 1 and not args.stop_on_error:  # a job failed; with --keep-going the rest was made
        _report_despite_failures(snakemake if after_run else None, sweep, report)
    return rc


def _history_store(sweep):
    """The history store the sweep is recorded into ($PERFSWEEP_HISTORY, else the config's ``history:``),
    opened and checked now; None where none is configured."""
    where = os.environ.get(HISTORY_ENV) or sweep.history
    if not where:
        return None
    from perfsweep.history.store import open_store  # SQLAlchemy only where a store is configured

    store = open_store(where)
    store.close()
    return where


def _record_history(where: str, results: str, labels: dict[str, str], app_version: str | None) -> None:
    # the recording's modules (compare's loader, the modeler's models) only where a store is configured
    from perfsweep.history.record import record_tree
    from perfsweep.history.store import open_store  # (the same)

    store = open_store(where)
    try:
        sweep_id, new, data = record_tree(store, results, labels, app_version)
    finally:
        store.close()
    print(f"perfsweep: history: {'recorded as' if new else 'already recorded as'} sweep #{sweep_id} in {store.name}"
          f" ({len(data.run_digests)} run records)")


def _cannot_write(where: Path, size: int = 1 << 16) -> str | None:
    """The OS error that keeps files from being written in the directory ``where`` (a full filesystem:
    "No space left on device", a quota), or None: a probe of ``size`` bytes is written, synced and
    removed."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".perfsweep-space.", dir=where)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(bytes(size))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.unlink(probe)
    return None


def _report_despite_failures(snakemake, sweep, report: str) -> None:
    """After a sweep in which a study did not get through (every run failed, a step failed): the report
    of the studies that did, with a page per failed study listing its runs, their status and error
    (``snakemake(targets, with_report=True)``; None: no report wanted), then one line per failed study:
    what failed, why, what to do. These are the last lines a user sees, after Snakemake's."""
    results = sweep.results
    made = {s.name: all(Path(p).exists() for p in _study_outputs(s, results)) for s in sweep.studies}
    failed = [s for s in sweep.studies if not made[s.name]]
    if not failed:
        return  # every study got through: what failed was of all studies (the models summary)
    tables = {s.name: layout.output(results, "collect", "runs", s.name) for s in failed
              if Path(layout.output(results, "collect", "runs", s.name)).exists()}
    targets = [p for s in sweep.studies if made[s.name] for p in _study_outputs(s, results)]
    pages = {name: layout.output(results, "failures_page", "failures", name) for name in tables}
    written = bool(snakemake and targets) and snakemake([*targets, *pages.values()], with_report=True) == 0
    for s in failed:
        table = (pages if written else tables).get(s.name)
        where = f"its runs and their errors: {table}" if table else f"see {layout.logs_dir(results)}"
        print(f"perfsweep: study {s.name} failed: {_why_failed(s, results)}; {where}; fix it and run the same "
              "command again", file=sys.stderr)
    if written:
        print(f"perfsweep: report of the other studies written to {report}"
              + (f" (with the failed studies' runs: {', '.join(pages)})" if pages else ""), file=sys.stderr)


def _study_outputs(study, results: str) -> list[str]:
    """What the workflow makes of a study, the report's pages included (perfsweep.layout)."""
    p = study.varies_processes()
    return layout.final_outputs(results, study.name, p) + layout.report_outputs(results, study.name, p)


def _why_failed(study, results: str) -> str:
    """Why a study's outputs were not made: no successful run (with the first run's error), or the first
    output missing."""
    import pandas as pd  # heavy (pandas): only after a failed sweep

    try:
        runs = pd.read_csv(layout.output(results, "collect", "runs", study.name))
    except (OSError, ValueError):
        runs = None
    if runs is not None and len(runs) and not (runs["status"] == "ok").any():
        return no_successful_run(runs)
    missing = next(p for p in _study_outputs(study, results) if not Path(p).exists())
    return f"{missing} was not made (a step failed: its log is under {layout.logs_dir(results)})"


def _interrupted(since: float, state_dir: str = ".snakemake") -> bool:
    """Whether the Snakemake that ended here since ``since`` stopped because it got SIGINT: its log says
    so (it exits 1, as after a failed job)."""
    for log in Path(state_dir, "log").glob("*.snakemake.log"):
        try:
            if log.stat().st_mtime >= since and "Terminating processes on user request" in log.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _wait(proc: subprocess.Popen) -> int:
    """Snakemake's exit code. On Ctrl-C (which reaches Snakemake too: same process group) wait until it
    has stopped its jobs and recorded them, then raise KeyboardInterrupt; if Snakemake did not get the
    signal (only perfsweep was interrupted) pass it on; a second Ctrl-C stops Snakemake at once.
    SIGTERM to perfsweep (``kill PID``, a batch system's limit) stops the sweep as a Ctrl-C does: SIGINT
    to Snakemake and every process under it (the runs in flight are archived as ``killed`` and measured
    by the next start), then as above, but a Snakemake still alive TERM_GRACE seconds later is killed
    (SIGKILL: its flock goes with it, and the next start clears its stale state); Terminated is raised.
    Not SIGTERM: Snakemake's SIGTERM handler takes its scheduler's lock, and hangs for good when it lands
    while the scheduler holds that lock; a batch system's SIGKILL follows its SIGTERM within seconds."""
    got: list[int] = []

    def terminate(signum, frame):
        if not got and proc.returncode is None:
            got.append(signum)
            _interrupt_all(proc)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return _wait_interruptible(proc, lambda: bool(got))
    except KeyboardInterrupt:
        if got:
            raise Terminated(got[0]) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt_all(proc: subprocess.Popen) -> None:
    """SIGINT to ``proc`` and then to every process under it (Linux: /proc/PID/task/TID/children), as a
    Ctrl-C in its terminal would send it, without the processes beside perfsweep in its group."""
    for pid in [proc.pid, *descendants(proc.pid)]:  # (no /proc: Snakemake alone, which still stops)
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:
            pass


# seconds a Snakemake gets to stop after SIGTERM to perfsweep (SLURM's KillWait before its SIGKILL: 30)
TERM_GRACE = 10.0


def _wait_interruptible(proc: subprocess.Popen, terminated=lambda: False) -> int:
    """``proc``'s exit code; on KeyboardInterrupt wait for it to stop (SIGINT once more after 2 s; a
    second Ctrl-C: SIGTERM), killed after TERM_GRACE seconds where ``terminated()`` (perfsweep got
    SIGTERM: it must end), then raise."""
    try:
        return proc.wait()
    except KeyboardInterrupt:
        end = time.monotonic() + TERM_GRACE
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        except KeyboardInterrupt:
            proc.terminate()
        while proc.poll() is None:
            try:
                proc.wait(timeout=max(0.1, end - time.monotonic()) if terminated() else None)
            except subprocess.TimeoutExpired:  # a Snakemake that answers no signal (hung in its own handler)
                proc.kill()
            except KeyboardInterrupt:
                proc.terminate()
        raise

