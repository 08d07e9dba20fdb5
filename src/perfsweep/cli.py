"""The ``perfsweep`` command.

    perfsweep validate [CONFIG]          check a config; print the studies and the number of runs
    perfsweep run [CONFIG] [-- SNAKEMAKE ARGS]
                                         validate, then run the sweep with Snakemake on this machine
    perfsweep predict MODELS.json n=1000,2000 p=4
                                         evaluate a fitted model (results/models/<study>/models.json)
    perfsweep recommend MODELS.json n=4000 p=1,2,4,8,16 --objective core_hours --constraint "p<=8"
                                         the best configuration under constraints

User errors print one line ``perfsweep: ...`` and exit 2, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from perfsweep.config import REPO_ROOT, load_config_file
from perfsweep.errors import UserError

DEFAULT_CONFIG = "config/config.yaml"


def _validate(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)
    print(f"{args.config}: valid; {len(sweep.studies)} studies, {sweep.n_runs()} runs")
    for s in sweep.studies:
        grid = " x ".join(f"{k}({len(v)})" for k, v in s.vary.items())
        print(f"  {s.name}: {grid}, k={s.repetitions}, {len(s.configurations())} configurations")
    return 0


def _run(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)  # fail fast with one line, before Snakemake starts
    base = [str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO_ROOT / "Snakefile"),
            "--configfile", args.config]
    cmd = [*base, "--cores", str(args.cores or os.cpu_count() or 1), *args.snakemake]
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    if rc != 0 or args.no_report or "-n" in args.snakemake or "--dry-run" in args.snakemake:
        return rc
    report = str(Path(sweep.results) / "report.html")
    cmd = [*base, "--report", report]
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
    if rc == 0:
        print(f"perfsweep: report written to {report}")
    return rc


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perfsweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check a config file")
    v.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    v.set_defaults(func=_validate)
    r = sub.add_parser("run", help="run a sweep locally with Snakemake")
    r.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    r.add_argument("--cores", type=int, default=None)
    r.add_argument("--no-report", action="store_true", help="skip the HTML report after the sweep")
    r.add_argument("snakemake", nargs=argparse.REMAINDER, help="arguments after -- go to Snakemake")
    r.set_defaults(func=_run)
    for register in _EXTENSIONS:
        register(sub)
    return ap


def _values(pairs: list[str]) -> dict[str, list[float]]:
    out = {}
    for item in pairs:
        if "=" not in item:
            raise UserError(f"{item!r}: give parameter values as NAME=V1,V2,...")
        name, text = item.split("=", 1)
        try:
            out[name] = [float(v) for v in text.split(",")]
        except ValueError:
            raise UserError(f"{item!r}: values must be numbers") from None
    return out


def _predict(args: argparse.Namespace) -> int:
    from perfsweep.modeling.predict import describe, form_note, load_model, predict

    model = load_model(args.models, args.region, args.metric)
    print(f"# {args.region}/{args.metric}: {model}")
    print(f"# {form_note(model)}")
    print("\n".join(describe(model, predict(model, _values(args.values), args.level), args.metric, args.level)))
    return 0


def _recommend(args: argparse.Namespace) -> int:
    from perfsweep.modeling.predict import form_note, load_model, recommend

    model = load_model(args.models, args.region, args.metric)
    table = recommend(model, _values(args.values), args.objective, args.processes, args.constraint,
                      args.min_efficiency, args.upper, args.level)
    print(f"# {args.region}/{args.metric}: {model}")
    print(f"# {form_note(model)}" + (f"; time = upper bound of the {100 * args.level:g} % interval" if args.upper else ""))
    print(f"# best by {args.objective} of {len(table)} candidates:")
    print(table.head(args.top).to_string(index=False))
    return 0


def _register_modeling(sub) -> None:
    for name, func, text in (("predict", _predict, "evaluate a fitted model at new parameter values"),
                             ("recommend", _recommend, "the configuration that minimises time or core-hours")):
        p = sub.add_parser(name, help=text)
        p.add_argument("models", help="a models.json written by the pipeline (results/models/<study>/)")
        p.add_argument("values", nargs="+", help="NAME=V1,V2,... for every parameter of the model")
        p.add_argument("--region", default="all")
        p.add_argument("--metric", default="time")
        p.add_argument("--level", type=float, default=0.9, help="of the prediction intervals (default 0.9)")
        p.set_defaults(func=func)
        if name == "recommend":
            p.add_argument("--objective", choices=["time", "core_hours"], default="time")
            p.add_argument("--processes", default=None,
                           help="the process-count parameter (default: the one stored with the model, else p)")
            p.add_argument("--upper", action="store_true", help="rank by the upper bound of the time's interval")
            p.add_argument("--constraint", action="append", default=[], help='e.g. "p<=72"')
            p.add_argument("--min-efficiency", type=float, default=None)
            p.add_argument("--top", type=int, default=5)


# Subcommands contributed by other modules, each a function(sub).
_EXTENSIONS: list = [_register_modeling]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "snakemake", None) and args.snakemake[0] == "--":
        args.snakemake = args.snakemake[1:]
    try:
        return args.func(args)
    except (UserError, FileNotFoundError) as exc:
        print(f"perfsweep: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
