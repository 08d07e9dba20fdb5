"""``perfsweep plan [CONFIG]``: per study its design, configurations, runs and estimated core-hours
(perfsweep.steps.estimate)."""

from __future__ import annotations

import argparse

from perfsweep.cli.arguments import DEFAULT_CONFIG, seconds
from perfsweep.config import load_config_file
from perfsweep.steps.estimate import ASSUMED_SECONDS, plan_lines
from perfsweep.sweep.plan import add_planned_points


def register(sub) -> None:
    """``perfsweep plan CONFIG``: configurations, runs and estimated core-hours per study."""
    p = sub.add_parser("plan", help="configurations, runs and estimated core-hours of each study's design")
    p.add_argument("config", nargs="?", default=DEFAULT_CONFIG)
    p.add_argument("--seconds-per-run", type=seconds, default=ASSUMED_SECONDS,
                   help=f"wall seconds per run and process assumed where a study has no records (default {ASSUMED_SECONDS:g})")
    p.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    sweep = load_config_file(args.config)
    print("\n".join(plan_lines(sweep, args.seconds_per_run)))
    if sweep.bundle == "packs":  # the jobs the sweep's runs make (perfsweep.sweep.packs)
        from perfsweep.sweep.packs import PackSettings, plan_sweep, summary

        add_planned_points(sweep)
        print("\n".join(summary(plan_sweep(sweep), PackSettings.from_sweep(sweep))))
    return 0
