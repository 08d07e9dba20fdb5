"""``perfsweep check-records PATH...``: name the damaged run records (the workflow sets them aside)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfsweep import layout
from perfsweep.errors import DamagedRecord, UserError
from perfsweep.sweep.record import ARCHIVED_STATUSES, LEFTOVER, STATUSES, check_record, leftover_temps, path_fields


def register(sub) -> None:
    c = sub.add_parser("check-records", help=f"check run records ({layout.named(layout.RUNS)}...) and name the damaged ones")
    c.add_argument("paths", nargs="+", help="record files or directories (e.g. results/runs)")
    c.set_defaults(func=_check_records)


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
