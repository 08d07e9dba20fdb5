"""``perfsweep compare BASE [BASE ...] NEW``: the command (the logic is in :mod:`perfsweep.compare`).

    perfsweep compare before/results after/results                 # table; exit 0, 1 (regression), 2 or 3
    perfsweep compare base1/results base2/results base3/results new/results   # judged against 3 baselines' spread
    perfsweep compare A B --threshold 5% --min-share 0.02 --format md --html compare.html
    perfsweep compare A B --at n=8000,p=64 --param-map procs=p     # extrapolated; A's procs is B's p
    perfsweep compare results                                       # a paired measurement (variants:): its two variants
    perfsweep compare results --variants base,new                   # ... two of its variants
    perfsweep compare new/results --history 3 --label branch=main   # against the history store's last 3
"""

from __future__ import annotations

import argparse
import gc
import math
import sys

from perfsweep.cli.arguments import level, parse_labels
from perfsweep.compare.judge import ALPHA, LEVEL, MIN_SHARE, THRESHOLD, compare
from perfsweep.compare.load import load_paired, load_side
from perfsweep.compare.page import write_html
from perfsweep.compare.render import render
from perfsweep.compare.setting import differences, differences_of, not_paired
from perfsweep.errors import CompareError, UserError


def _compare(args: argparse.Namespace) -> int:
    pick = [v.strip() for v in args.variants.split(",")] if args.variants else []
    if pick and len(args.sides) > 1:
        raise CompareError("compare: --variants picks two variants of one results tree: give that one tree only")
    threshold = parse_threshold(args.threshold)
    param_map = parse_param_map(args.param_map)
    at = parse_at(args.at)
    if args.absolute:
        print("perfsweep: compare: --absolute is deprecated and does nothing: every row is judged on its own ratio "
              "B/A (there is no common shift any more)", file=sys.stderr)
    history = None
    gc.disable()  # the sides are millions of objects that live to the end: the collector's passes over them while
    try:  # they were read made reading 10,000 call paths a side 3x as slow; frozen after, later passes skip them
        if args.history is not None:  # the baselines from the history store
            history, bases, new, changed = _from_history(args)
        elif len(args.sides) == 1:  # a paired measurement: its variants A and B
            paired = load_paired(args.sides[0], pick)
            bases, new = [paired[0]], paired[1]
        else:
            *bases, new = [load_side(path) for path in args.sides]
    finally:
        gc.freeze()
        gc.enable()
    if history is None and len(args.sides) == 1:
        changed = differences(args.sides[0], args.sides[0], (bases[0].variant, new.variant))
        if other := not_paired(changed):
            raise CompareError(f"{args.sides[0]}: paired measurement: the variants' runs differ in more than the app "
                               f"({other[0]}): they were not measured together")
    elif history is None:
        changed = differences(args.sides[-2], args.sides[-1])
    result = compare(bases[-1], new, threshold=threshold, at=at, param_map=param_map, min_share=args.min_share,
                     alpha=args.alpha, level=args.level, history=bases[:-1],
                     fail_on_inconclusive=args.fail_on_inconclusive)
    result.differences = changed
    sys.stdout.write(render(result, args.format))
    code = result.exit_code()
    if history is not None:
        from perfsweep.history.record import record_verdict  # (as in _from_history)

        store, judged, chosen = history
        record_verdict(store, judged, args.sides[0], [b.id for b in chosen], code, [r.record() for r in result.rows])
        store.close()
    if args.html:
        try:
            write_html(result, args.html)
        except UserError as exc:  # the page is extra: a regression's exit 1 stays 1
            print(f"perfsweep: {exc}" + (" (the comparison itself is above; exit 1: a regression)" if code else ""),
                  file=sys.stderr)
            return code or 2
        print(f"perfsweep: comparison page written to {args.html}", file=sys.stderr)
    return code


def _from_history(args: argparse.Namespace):
    """NEW's baselines from the history store (perfsweep.history.baselines): ((the store, NEW's sweep id if it
    is recorded, the baselines), the baseline sides, NEW's side, the settings' differences)."""
    # the history store's modules and SQLAlchemy only where --history asks for them (compare's other calls need none)
    from sqlalchemy import select

    from perfsweep.history import baselines, schema, store as stores, sweep as sweeps  # (the same)

    if len(args.sides) != 1 or args.variants:
        raise CompareError("compare: --history N judges one results tree (NEW) against the store's sweeps: give NEW "
                           "only, without --variants")
    if args.history < 1:
        raise CompareError(f"compare: --history {args.history}: give the number of baselines, at least 1")
    store = stores.open_store(stores.locate(args.store))
    new = load_side(args.sides[0])
    data = sweeps.read_tree(args.sides[0], side=new, entries=False)  # its identity: what baselines are matched by
    chosen = baselines.choose(store, data, args.history, parse_labels(args.label))
    print(f"perfsweep: compare: {len(chosen)} baseline{'s' if len(chosen) > 1 else ''} from the history store "
          f"{store.name}: " + ", ".join(f"{b.name()} of {b.when}" for b in chosen), file=sys.stderr)
    loaded = [baselines.load(store, b, [s.name for s in data.studies]) for b in chosen]
    with store.read() as conn:
        judged = conn.execute(select(schema.sweeps.c.id).where(schema.sweeps.c.digest == data.digest)).scalar()
    return (store, judged, chosen), [side for side, _ in loaded], new, differences_of(loaded[-1][1], data.whole)


def register(sub) -> None:
    """Adds ``perfsweep compare``."""

    p = sub.add_parser("compare", help="compare sweeps' models: a performance-regression gate (exit 1)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sides", nargs="+", metavar="SWEEP",
                   help="BASE [BASE ...] NEW: the baseline sweeps (oldest first; the last is A, the latest) and the "
                        "new sweep (B), each a results directory, a models.json, or an Extra-P input / CUBE directory; "
                        "or one results tree of a paired measurement (config key variants:): its variants A and B")
    p.add_argument("--variants", metavar="A,B", default=None,
                   help="of a paired measurement's results tree: the variants to compare (default: the config's first two)")
    p.add_argument("--threshold", default=f"{THRESHOLD:.0%}",
                   help="smallest change that counts, e.g. 5%% or 0.05 (default %(default)s)")
    p.add_argument("--at", default=None, help="target configuration NAME=V,... (B's names; default: per study "
                                              "the largest configuration both measured)")
    p.add_argument("--param-map", action="append", default=[], metavar="OLD=NEW",
                   help="a parameter renamed from A to B (repeatable)")
    p.add_argument("--min-share", type=_share, default=MIN_SHARE,
                   help="rows below this share of their metric's total at the target are shown but do not gate "
                        "(default %(default)s)")
    p.add_argument("--alpha", type=level, default=ALPHA,
                   help="family-wise error rate of the gating rows, Holm-corrected (default %(default)s)")
    p.add_argument("--level", type=level, default=LEVEL, help="of the ratios' intervals (default %(default)s)")
    p.add_argument("--fail-on-inconclusive", action="store_true",
                   help="a strict gate: exit 1 also when a gating row is inconclusive (the sweeps cannot tell)")
    p.add_argument("--absolute", action="store_true", help="deprecated, does nothing: the raw ratios are the default")
    p.add_argument("--history", type=int, metavar="N", default=None,
                   help="judge NEW against the last N other sweeps of the history store (the same studies and "
                        "setting, a host of the same fingerprint): perfsweep compare NEW --history 3")
    p.add_argument("--store", default=None, help="the history store: a SQLite file or a postgresql:// URL (default: "
                                                 "$PERFSWEEP_HISTORY, else perfsweep-history.sqlite)")
    p.add_argument("--label", action="append", default=[], metavar="NAME=VALUE",
                   help="with --history: only baselines recorded with this label (repeatable)")
    p.add_argument("--format", choices=["text", "md", "csv", "json"], default="text")
    p.add_argument("--html", metavar="PATH", help="also write a self-contained HTML page")
    p.set_defaults(func=_compare)


def _share(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share in [0, 1] (e.g. 0.02 or 2%)")
    return value


def parse_param_map(items: list[str]) -> dict[str, str]:
    """``["p=ranks", ...]``: A's parameter name -> B's."""
    out: dict[str, str] = {}
    for item in items:
        old, sep, new = item.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise CompareError(f"--param-map {item!r}: give OLD=NEW (A's parameter name = B's)")
        if old in out:
            raise CompareError(f"--param-map {item!r}: {old} is mapped twice")
        out[old] = new
    return out


def parse_at(text: str | None) -> dict[str, float]:
    """``"n=4000,p=16"`` -> {"n": 4000.0, "p": 16.0} (B's parameter names)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not name or not (math.isfinite(number) and number > 0):
            raise CompareError(f"--at {text!r}: give NAME=VALUE,... with values > 0 (e.g. n=4000,p=16)")
        out[name] = number
    return out


def parse_threshold(text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value < 10):
        raise CompareError(f"--threshold {text!r}: give a relative change such as 5% or 0.05")
    return value
