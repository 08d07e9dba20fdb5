"""``perfsweep validate [CONFIG] [--sample-output FILE]``: check a config; print the studies and the number
of runs (and what the app's patterns extract from a saved output)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfsweep.apps.metric_kinds import declared, kind_of
from perfsweep.apps.output import check_sample
from perfsweep.cli.arguments import DEFAULT_CONFIG
from perfsweep.config import load_config_file
from perfsweep.errors import UserError


def register(sub) -> None:
    v = sub.add_parser("validate", help="check a config file")
    v.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    v.add_argument("--sample-output", metavar="FILE",
                   help="a saved output of your app: show what time_pattern and patterns extract from it")
    v.set_defaults(func=_validate)


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
            kind = kind_of(e.name, declared(app))  # its declared unit (a guessed one is not shown)
            print(f"  {e.name}: {e.value:g}{kind.suffix() if kind.declared else ''}" if e.ok
                  else f"  {e.name}: NO MATCH: {e.problem}")
            key = "time_pattern" if e.what == "time_pattern" else f"patterns.{e.name}"
            if not e.ok:
                failed.append(f"{where}.{key} ({e.pattern}): {e.problem} ({path})")
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        print(f"perfsweep: {sweep.source}: {failed[0]}{more}: every run with such output would fail", file=sys.stderr)
        return 1
    print(f"{path}: every pattern matches")
    return 0

