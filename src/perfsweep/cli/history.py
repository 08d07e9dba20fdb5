"""``perfsweep history``: the history store of sweeps (the logic is in :mod:`perfsweep.history`).

    perfsweep history add results --app-version 1.4.2 --label branch=main   # record a results tree
    perfsweep history list                                                  # the recorded sweeps
    perfsweep history trend --study T_n --format md                         # per region and metric, over the sweeps
    perfsweep history trend --html trends.html                              # the same as a page that opens offline

The store: --store, else $PERFSWEEP_HISTORY, else perfsweep-history.sqlite in the current directory; a
postgresql://user:password@host/database URL for a store that several CI runners share
(docs/how-to/history.md). ``perfsweep compare NEW --history N`` judges NEW against the store's last N.
"""

from __future__ import annotations

import argparse
import sys

from perfsweep.cli.arguments import parse_labels


def _store(args):
    from perfsweep.history.store import locate, open_store  # SQLAlchemy: imported by the command that needs it

    return open_store(locate(args.store))


def _add(args: argparse.Namespace) -> int:
    # the recording's modules (the compare's loader, the modeler's models) for this command only
    from perfsweep.history.record import record_tree

    labels = parse_labels(args.label)
    store = _store(args)
    try:
        for results in args.results:
            sweep_id, new, data = record_tree(store, results, labels, args.app_version)
            what = (f"{len(data.run_digests)} run records" if data.run_digests else "no run records (its models and "
                    "aggregates)") + ("" if data.repetitions else ", without repetitions (medians only)")
            print(f"perfsweep: history: {results}: " + (f"recorded as sweep #{sweep_id} in {store.name} ({what}, "
                  f"{len(data.studies)} studies)" if new else f"already recorded as sweep #{sweep_id} in {store.name}: "
                  "nothing added"))
    finally:
        store.close()
    return 0


def _list(args: argparse.Namespace) -> int:
    from perfsweep.history.trends import list_sweeps, render_table  # (numpy, SQLAlchemy: this command's)

    store = _store(args)
    try:
        table = list_sweeps(store)
    finally:
        store.close()
    sys.stdout.write(render_table(table, args.format))
    return 0


def _trend(args: argparse.Namespace) -> int:
    from perfsweep.history.trends import render_table, trends, write_html  # (ruptures: this command's)

    store = _store(args)
    try:
        table = trends(store, study=args.study, labels=parse_labels(args.label))
    finally:
        store.close()
    sys.stdout.write(render_table(table, args.format))
    if args.html:
        write_html(table, args.html, store_name=store.name)
        print(f"perfsweep: trend page written to {args.html}", file=sys.stderr)
    return 0


def register(sub) -> None:
    """Adds ``perfsweep history`` and its commands."""
    p = sub.add_parser("history", help="the history store: record sweeps, list them, their trends",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = p.add_subparsers(dest="history_command", required=True)

    def common(q):
        q.add_argument("--store", default=None, help="a SQLite file or a postgresql:// URL (default: "
                                                     "$PERFSWEEP_HISTORY, else perfsweep-history.sqlite)")
        return q

    add = common(commands.add_parser("add", help="record results trees (idempotent)"))
    add.add_argument("results", nargs="+", metavar="RESULTS", help="a results directory with models")
    add.add_argument("--app-version", default=None, help="the app's version or commit (kept apart from perfsweep's)")
    add.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                     help="a label of the sweep, e.g. branch=main (repeatable)")
    add.set_defaults(func=_add)
    show = common(commands.add_parser("list", help="the recorded sweeps"))
    show.add_argument("--format", choices=["text", "md", "csv", "json"], default="text")
    show.set_defaults(func=_list)
    trend = common(commands.add_parser("trend", help="per study, region and metric: the sweeps in order, with "
                                                     "their change points"))
    trend.add_argument("--study", default=None, help="one study (default: every study)")
    trend.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                       help="only sweeps recorded with this label (repeatable)")
    trend.add_argument("--format", choices=["text", "md", "csv", "json"], default="text")
    trend.add_argument("--html", metavar="PATH", help="also write the trend page (one HTML file, opens offline)")
    trend.set_defaults(func=_trend)
