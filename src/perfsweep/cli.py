"""The ``perfsweep`` command.

    perfsweep validate [CONFIG]          check a config; print the studies and the number of runs
    perfsweep run [CONFIG] [-- SNAKEMAKE ARGS]
                                         validate, then run the sweep with Snakemake on this machine

User errors print one line ``perfsweep: ...`` and exit 2, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from perfsweep.config import REPO_ROOT, ConfigError, load_config_file

DEFAULT_CONFIG = "config/config.yaml"


class UserError(Exception):
    """A mistake of the caller: reported as one line, exit code 2."""


def _validate(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)
    print(f"{args.config}: valid; {len(sweep.studies)} studies, {sweep.n_runs()} runs")
    for s in sweep.studies:
        grid = " x ".join(f"{k}({len(v)})" for k, v in s.vary.items())
        print(f"  {s.name}: {grid}, k={s.repetitions}, {len(s.configurations())} configurations")
    return 0


def _run(args: argparse.Namespace) -> int:
    load_config_file(args.config)  # fail fast with one line, before Snakemake starts
    cmd = [str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO_ROOT / "Snakefile"),
           "--configfile", args.config, "--cores", str(args.cores or os.cpu_count() or 1), *args.snakemake]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd)


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
    r.add_argument("snakemake", nargs=argparse.REMAINDER, help="arguments after -- go to Snakemake")
    r.set_defaults(func=_run)
    for register in _EXTENSIONS:
        register(sub)
    return ap


# Subcommands contributed by other modules (modeling: predict, recommend), each a function(sub).
_EXTENSIONS: list = []


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "snakemake", None) and args.snakemake[0] == "--":
        args.snakemake = args.snakemake[1:]
    try:
        return args.func(args)
    except (ConfigError, UserError) as exc:
        print(f"perfsweep: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
