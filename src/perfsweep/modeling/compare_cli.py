"""``perfsweep compare A B``: the command (the logic is in :mod:`perfsweep.modeling.sweep_compare`).

    perfsweep compare before/results after/results                 # table; exit 0, 1 (regression) or 2
    perfsweep compare A B --threshold 5% --min-share 0.02 --format md --html compare.html
    perfsweep compare A B --at n=8000,p=64 --param-map procs=p     # extrapolated; A's procs is B's p
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from perfsweep.modeling import sweep_compare as sc
from perfsweep.modeling.sweep_compare_html import write_html


def _compare(args: argparse.Namespace) -> int:
    threshold = sc.parse_threshold(args.threshold)
    param_map = sc.parse_param_map(args.param_map)
    at = sc.parse_at(args.at)
    a, b = sc.load_side(args.a), sc.load_side(args.b)
    result = sc.compare(a, b, threshold=threshold, at=at, param_map=param_map, min_share=args.min_share,
                        alpha=args.alpha, level=args.level, absolute=args.absolute)
    sys.stdout.write(sc.render(result, args.format))
    if args.html:
        write_html(result, args.html)
        print(f"perfsweep: comparison page written to {args.html}", file=sys.stderr)
    return result.exit_code()


def register_cli(sub, level: Callable[[str], float]) -> None:
    """Adds ``perfsweep compare`` (cli.py's _EXTENSIONS; ``level``: its argument type of a level in (0, 1))."""

    p = sub.add_parser("compare", help="compare two sweeps' models: a performance-regression gate (exit 1)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="before: a results directory, a models.json, or an Extra-P input / CUBE directory")
    p.add_argument("b", help="after: the same kinds")
    p.add_argument("--threshold", default=f"{sc.THRESHOLD:.0%}",
                   help="smallest change that counts, e.g. 5%% or 0.05 (default %(default)s)")
    p.add_argument("--at", default=None, help="target configuration NAME=V,... (B's names; default: per study "
                                              "the largest configuration both measured)")
    p.add_argument("--param-map", action="append", default=[], metavar="OLD=NEW",
                   help="a parameter renamed from A to B (repeatable)")
    p.add_argument("--min-share", type=_share, default=sc.MIN_SHARE,
                   help="rows below this share of their metric's total at the target are shown but do not gate "
                        "(default %(default)s)")
    p.add_argument("--alpha", type=level, default=sc.ALPHA,
                   help="family-wise error rate of the gating rows, Holm-corrected (default %(default)s)")
    p.add_argument("--level", type=level, default=sc.LEVEL, help="of the ratios' intervals (default %(default)s)")
    p.add_argument("--absolute", action="store_true",
                   help="judge the raw ratios B/A (default: each row against its study's common shift, the median "
                        "row's ratio, where the study has at least 5 rows: the host's speed between the sweeps)")
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
