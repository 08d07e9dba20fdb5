"""``perfsweep models FILE [--out DIR]``: models of every call path and metric of an Extra-P file (text, JSON,
JSON Lines) or a directory of Score-P CUBE profiles (perfsweep.modeling.extrap_models)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from perfsweep.errors import ExtrapFormatError
from perfsweep.modeling.extrap_models import fit_extrap
from perfsweep.tables import to_markdown, write_table


def register(sub) -> None:
    p = sub.add_parser("models", help="model every call path and metric of an Extra-P file or CUBE directory")
    p.add_argument("file", help="Extra-P text, JSON or JSON Lines file, or a directory of CUBE profiles")
    p.add_argument("--out", help="directory for models.{csv,md,tex} and models.json")
    p.set_defaults(func=_models)


def _models(args: argparse.Namespace) -> int:
    table, entries = fit_extrap(args.file)
    print(to_markdown(table), end="")
    if args.out:
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise ExtrapFormatError(f"{out}: --out must be a directory")
        out.mkdir(parents=True, exist_ok=True)
        write_table(table, str(out / "models"), caption=f"Models of {args.file}")  # not the results tree
        (out / "models.json").write_text(json.dumps(entries, indent=1))  # not the results tree: --out
        print(f"perfsweep: models written to {out}/models.{{csv,md,tex,json}}")
    return 0
