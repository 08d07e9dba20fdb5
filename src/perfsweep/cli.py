"""The ``perfsweep`` command.

    perfsweep validate [CONFIG] [--sample-output FILE]
                                         check a config; print the studies and the number of runs (and
                                         what the app's patterns extract from a saved output)
    perfsweep run [CONFIG] [-- SNAKEMAKE ARGS]
                                         validate, then run the sweep with Snakemake on this machine
    perfsweep plan [CONFIG]              per study: design, configurations, runs, estimated core-hours
    perfsweep predict MODELS.json n=1000,2000 p=4
                                         evaluate a fitted model (results/models/<study>/models.json)
    perfsweep recommend MODELS.json n=4000 p=1,2,4,8,16 --objective core_hours --constraint "p<=8"
                                         the best configuration under constraints
    perfsweep models FILE [--out DIR]    models of every call path and metric of an Extra-P file
                                         (text, JSON, JSON Lines) or a directory of Score-P CUBE profiles
    perfsweep check-records results/runs name the damaged run records (the workflow sets them aside)
    perfsweep compare A B [--threshold 5%] [--at n=8000] [--html PATH]
                                         two sweeps' models side by side: exit 1 on a regression

User errors print one line ``perfsweep: ...`` and exit 2, without a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfsweep import layout, planning
from perfsweep.apps.output import check_sample
from perfsweep.compare import cli as compare_cli
from perfsweep.config import REPO_ROOT, load_config_file
from perfsweep.errors import DamagedRecord, Terminated, UserError
from perfsweep.modeling import extrap_models, validation
from perfsweep.modeling.predict import describe, form_note, is_time_metric, load_entry, load_model, predict, recommend
from perfsweep.records import ARCHIVED_STATUSES, LEFTOVER, STATUSES, check_record, leftover_temps, path_fields
from perfsweep.recovery import acquire_run_lock, workdir_busy
from perfsweep.rounds import run_rounds
from perfsweep.runner import descendants
from perfsweep.tables import no_successful_run

DEFAULT_CONFIG = "config/config.yaml"


def _validate(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)
    print(f"{args.config}: valid; {len(sweep.studies)} studies, {sweep.n_runs()} runs")
    for s in sweep.studies:
        grid = " x ".join(f"{k}({len(v)})" for k, v in s.vary.items())
        k = f"{s.repetitions}..{s.max_repetitions} (adaptive)" if s.max_repetitions > s.repetitions else s.repetitions
        val = (f" + {len(s.validation)} validation point{'s' * (len(s.validation) != 1)} (k={s.validation_repetitions})"
               if s.validation else "")
        print(f"  {s.name}: {grid}, k={k}, {len(s.configurations())} configurations{val}")
    return _check_sample_output(sweep, args.sample_output) if args.sample_output else 0


def _check_sample_output(sweep, path: str) -> int:
    """What each external app's patterns extract from a saved output: 0 if all match, 1 if one does not."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the sample output ({exc.strerror or exc})") from None
    apps: dict[str, tuple[dict, list[str]]] = {}
    for s in sweep.studies:
        if "command" in s.app:
            apps.setdefault(repr(sorted(s.app.items())), (s.app, []))[1].append(s.name)
    if not apps:
        raise UserError(f"{sweep.source}: app: no study runs an external app (command:); built-in apps "
                        "report their times themselves, there is nothing to check in a sample output")
    failed = []
    for app, studies in apps.values():
        print(f"sample output {path}, app of {', '.join(studies)}: {app['command']}")
        found = check_sample(text, app)
        if not app.get("time_pattern"):
            print("  time: no time_pattern, a run's time is the wall time of its launch")
        where = "app" if app == sweep.app else f"studies.{studies[0]}.app"
        for e in found:
            print(f"  {e.name}: {e.value:g}" if e.ok else f"  {e.name}: NO MATCH: {e.problem}")
            key = "time_pattern" if e.what == "time_pattern" else f"patterns.{e.name}"
            if not e.ok:
                failed.append(f"{where}.{key} ({e.pattern}): {e.problem} ({path})")
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        print(f"perfsweep: {sweep.source}: {failed[0]}{more}: every run with such output would fail", file=sys.stderr)
        return 1
    print(f"{path}: every pattern matches")
    return 0


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
    if not acquire_run_lock() or workdir_busy():
        raise UserError("another perfsweep run is working in this directory: wait for it to end or stop it "
                        "(Ctrl-C); Snakemake's --unlock would let both write the same records")

    rc = run_rounds(snakemake, sweep)  # again while a step (e.g. adaptive repetitions) plans more runs
    if rc == 0 and after_run:
        print(f"perfsweep: report written to {report}")
    elif rc == 1 and (why := _cannot_write(Path(sweep.results) if Path(sweep.results).is_dir() else where)):
        # the runs' records and logs had no room: say why
        print(f"perfsweep: {sweep.results}: {why}: the runs could not write their records and logs (the finished "
              "ones are kept); free space there and run the same command again", file=sys.stderr)
    elif rc == 1 and not args.stop_on_error:  # a job failed; with --keep-going the rest was made
        _report_despite_failures(snakemake if after_run else None, sweep, report)
    return rc


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
    by the next start), then as above; Terminated is raised. Not SIGTERM: Snakemake's SIGTERM handler
    takes its scheduler's lock, and hangs for good when it lands while the scheduler holds that lock."""
    got: list[int] = []

    def terminate(signum, frame):
        if not got and proc.returncode is None:
            got.append(signum)
            _interrupt_all(proc)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return _wait_interruptible(proc)
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


def _wait_interruptible(proc: subprocess.Popen) -> int:
    try:
        return proc.wait()
    except KeyboardInterrupt:
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        except KeyboardInterrupt:
            proc.terminate()
        while proc.poll() is None:
            try:
                proc.wait()
            except KeyboardInterrupt:
                proc.terminate()
        raise


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perfsweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check a config file")
    v.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    v.add_argument("--sample-output", metavar="FILE",
                   help="a saved output of your app: show what time_pattern and patterns extract from it")
    v.set_defaults(func=_validate)
    r = sub.add_parser("run", help="run a sweep locally with Snakemake")
    r.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    r.add_argument("--cores", type=_positive_int, default=None, help="cores for Snakemake (default: all)")
    r.add_argument("--no-report", action="store_true", help="skip the HTML report after the sweep")
    r.add_argument("--stop-on-error", action="store_true",
                   help="stop at the first failed job (default: finish every other study, Snakemake --keep-going)")
    r.add_argument("--workflow", metavar="DIR", default=None,
                   help="the perfsweep checkout holding the Snakefile (default: $PERFSWEEP_WORKFLOW, else the "
                        "checkout perfsweep runs from; needed after a non-editable install)")
    r.set_defaults(func=_run, snakemake=[])
    for register in _EXTENSIONS:
        register(sub)
    return ap


def _values(pairs: list[str]) -> dict[str, list[float]]:
    out = {}
    for item in pairs:
        if "=" not in item:
            raise UserError(f"{item!r}: give parameter values as NAME=V1,V2,...")
        name, text = item.split("=", 1)
        name = name.strip()
        if not name:
            raise UserError(f"{item!r}: no parameter name before '='")
        if name in out:
            raise UserError(f"{item!r}: parameter {name} given twice (give its values once: {name}=V1,V2,...)")
        try:
            out[name] = [float(v) for v in text.split(",")]
        except ValueError:
            raise UserError(f"{item!r}: values must be numbers") from None
        bad = [v for v in out[name] if not math.isfinite(v) or v <= 0]
        if bad:  # PMNF terms are powers and logarithms of the parameters: defined for values > 0
            raise UserError(f"{item!r}: {name}={bad[0]:g} is not a finite number > 0 (a model's terms "
                            "are powers and logarithms of its parameters)")
    return out


def _load_model(args: argparse.Namespace):
    return load_model(args.models, args.region, args.metric)


def _predict(args: argparse.Namespace) -> int:
    model, entry = load_entry(args.models, args.region, args.metric)
    table = predict(model, _values(args.values), args.level)
    print(f"# {args.region}/{args.metric}: {model}")
    print(f"# {form_note(model)}")
    for note in entry.get("notes") or []:  # what the models table says of it (undecided form, regimes)
        print(f"# note: {note}")
    checks = entry.get("validation") or []  # the study's validation points: measured, never fitted
    unit = " s" if is_time_metric(args.metric) else ""
    for line in validation.describe(checks, args.metric, entry.get("level", 0.9), unit):
        print(f"# {line}")
    print("\n".join(describe(model, table, args.metric, args.level)))
    return 0


def _recommend(args: argparse.Namespace) -> int:
    if not is_time_metric(args.metric):
        raise UserError(f"--metric {args.metric}: recommend ranks configurations by run time and core-hours; "
                        "give a time metric (predict evaluates any metric)")
    model = _load_model(args)
    if args.processes is not None and args.processes not in model.param_names:
        raise UserError(f"--processes {args.processes}: not a parameter of the model ({', '.join(model.param_names)})")
    table = recommend(model, _values(args.values), args.objective, args.processes, args.constraint,
                      args.min_efficiency, args.upper, args.level)
    print(f"# {args.region}/{args.metric}: {model}")
    print(f"# {form_note(model)}" + (f"; time = upper bound of the {100 * args.level:g} % interval" if args.upper else ""))
    if "efficiency_reference" in table.attrs:
        print(f"# efficiency = work at {table.attrs['efficiency_reference']} / work, as predicted")
    print(f"# best by {args.objective} of {len(table)} candidates:")
    print(table.head(args.top).to_string(index=False))
    return 0


def _register_modeling(sub) -> None:
    for name, func, text in (("predict", _predict, "evaluate a fitted model at new parameter values"),
                             ("recommend", _recommend, "the configuration that minimises time or core-hours")):
        p = sub.add_parser(name, help=text)
        p.add_argument("models", help=f"a models.json written by the pipeline ({layout.named('models')}<study>/)")
        p.add_argument("values", nargs="+", help="NAME=V1,V2,... for every parameter of the model")
        p.add_argument("--region", default="all")
        p.add_argument("--metric", default="time")
        p.add_argument("--level", type=_level, default=0.9, help="of the prediction intervals (default 0.9)")
        p.set_defaults(func=func)
        if name == "recommend":
            p.add_argument("--objective", choices=["time", "core_hours"], default="time")
            p.add_argument("--processes", default=None,
                           help="the process-count parameter (default: the one stored with the model, else p)")
            p.add_argument("--upper", action="store_true", help="rank by the upper bound of the time's interval")
            p.add_argument("--constraint", action="append", default=[], help='e.g. "p<=72"')
            p.add_argument("--min-efficiency", type=_fraction, default=None)
            p.add_argument("--top", type=_positive_int, default=5)


def _check_records(args: argparse.Namespace) -> int:
    """Check run records (files, or directories searched for rep<k>.json) against their paths."""
    paths: list[Path] = []
    damaged = 0
    for item in map(Path, args.paths):
        if item.is_dir():
            paths += sorted(item.rglob(layout.record_glob()))
            for tmp in leftover_temps(item):
                print(f"perfsweep: {tmp}: {LEFTOVER} (the next perfsweep run sets it aside)", file=sys.stderr)
                damaged += 1
        elif item.exists():
            paths.append(item)
        else:
            raise UserError(f"{item}: no such file or directory")
    for path in paths:
        try:
            check_record(path, **path_fields(path), statuses=ARCHIVED_STATUSES if layout.is_archived(path) else STATUSES)
        except DamagedRecord as exc:
            print(f"perfsweep: damaged record {exc}", file=sys.stderr)
            damaged += 1
    if not damaged:
        print(f"perfsweep: {len(paths)} record(s) checked, none damaged")
    return 2 if damaged else 0


def _register_records(sub) -> None:
    c = sub.add_parser("check-records", help=f"check run records ({layout.named(layout.RUNS)}...) and name the damaged ones")
    c.add_argument("paths", nargs="+", help="record files or directories (e.g. results/runs)")
    c.set_defaults(func=_check_records)


def _register_extrap(sub) -> None:
    extrap_models.register_cli(sub)


def _register_plan(sub) -> None:
    planning.register_cli(sub)


def _register_compare(sub) -> None:
    compare_cli.register_cli(sub, _level)


# Subcommands contributed by other modules, each a function(sub).
_EXTENSIONS: list = [_register_modeling, _register_records, _register_extrap, _register_plan, _register_compare]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1")
    return value


def _unit_interval(closed: bool, what: str):
    """An argparse type: a number in (0, 1] (closed) or (0, 1)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0 < value <= 1 if closed else 0 < value < 1):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return parse


_fraction = _unit_interval(True, "a number in (0, 1]")
_level = _unit_interval(False, "a confidence level in (0, 1), e.g. 0.9")


class _Parser(argparse.ArgumentParser):
    """Errors in one line (``perfsweep: <subcommand>: <message>``) and exit 2, without the usage dump."""

    def error(self, message: str):
        sub = self.prog.removeprefix("perfsweep").strip()
        self.exit(2, f"perfsweep: {sub + ': ' if sub else ''}{message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:  # everything after -- goes to Snakemake (perfsweep run)
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    _one_line_errors(parser)
    args = parser.parse_args(argv)
    if extra:
        if args.command != "run":
            parser.error(f"arguments after -- are for Snakemake and only go with run: {' '.join(extra)}")
        args.snakemake = extra
    try:
        return args.func(args)
    except (UserError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"perfsweep: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        how, rc = ("interrupted", 130) if isinstance(exc, KeyboardInterrupt) else ("terminated", 128 + exc.signum)
        print(f"perfsweep: {how}; finished runs are kept, run the same command again to measure the rest",
              file=sys.stderr)
        return rc
    except BrokenPipeError:  # output piped into e.g. head, which has stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make the parser and its subparsers report argument errors in one line."""
    parser.__class__ = _Parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _one_line_errors(sub)


if __name__ == "__main__":
    sys.exit(main())
