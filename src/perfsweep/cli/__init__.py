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
    perfsweep history add|list|trend     the history store: record sweeps, list them, their trends

User errors print one line ``perfsweep: ...`` and exit 2, without a traceback; an internal error (a bug
of perfsweep) prints one line naming it and where to report it, and exits 3 (every subcommand; set
PERFSWEEP_TRACEBACK=1 to see the traceback). perfsweep compare exits 1 on a regression.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from perfsweep.errors import Terminated, UserError

# The subcommands in the order --help lists them: the name of each and of the module (perfsweep.cli.<module>)
# whose register(sub) adds its parser. A command line with one of them imports that module alone: each
# imports what its command needs (pandas, scipy, Snakemake's planning), which took 3-4 s of every call.
COMMANDS: dict[str, str] = {"validate": "validate", "run": "run", "predict": "predict", "recommend": "predict",
                            "check-records": "records", "models": "models", "plan": "plan", "compare": "compare",
                            "history": "history"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``command``'s alone (the others are not imported)."""
    ap = argparse.ArgumentParser(prog="perfsweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    modules = [COMMANDS[command]] if command in COMMANDS else COMMANDS.values()
    for module in dict.fromkeys(modules):
        importlib.import_module(f"perfsweep.cli.{module}").register(sub)
    return ap


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
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
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
    except Exception as exc:  # a bug of perfsweep, never the code of a regression (1) or of bad input (2)
        if os.environ.get("PERFSWEEP_TRACEBACK"):
            raise
        print(f"perfsweep: internal error in {args.command}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
              f" ({_where(exc)}); please report it with the command line at {ISSUES} "
              "(PERFSWEEP_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return INTERNAL_ERROR


INTERNAL_ERROR = 3
ISSUES = "the perfsweep issue tracker (docs/reference/cli.md, Exit codes)"


def _where(exc: BaseException) -> str:
    """The innermost frame of the exception: file:line."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}" if tb is not None else "?"


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make the parser and its subparsers report argument errors in one line."""
    parser.__class__ = _Parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _one_line_errors(sub)

