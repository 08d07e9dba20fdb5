"""``perfsweep predict MODELS.json n=1000,2000 p=4``: evaluate a fitted model; ``perfsweep recommend MODELS.json
n=4000 p=1,2,4,8,16 --objective core_hours --constraint "p<=8"``: the best configuration under constraints."""

from __future__ import annotations

import argparse
import math

from perfsweep import layout
from perfsweep.cli.arguments import fraction, level, positive_int
from perfsweep.errors import UserError
from perfsweep.modeling import validation
from perfsweep.apps.metric_kinds import kind_of
from perfsweep.modeling.predict import describe, form_note, load_entry, predict, recommend


def register(sub) -> None:
    for name, func, text in (("predict", _predict, "evaluate a fitted model at new parameter values"),
                             ("recommend", _recommend, "the configuration that minimises time or core-hours")):
        p = sub.add_parser(name, help=text)
        p.add_argument("models", help=f"a models.json written by the pipeline ({layout.named('models')}<study>/)")
        p.add_argument("values", nargs="+", help="NAME=V1,V2,... for every parameter of the model")
        p.add_argument("--region", default="all")
        p.add_argument("--metric", default="time")
        p.add_argument("--level", type=level, default=0.9, help="of the prediction intervals (default 0.9)")
        p.set_defaults(func=func)
        if name == "recommend":
            p.add_argument("--objective", choices=["time", "core_hours"], default="time")
            p.add_argument("--processes", default=None,
                           help="the process-count parameter (default: the one stored with the model, else p)")
            p.add_argument("--upper", action="store_true", help="rank by the upper bound of the time's interval")
            p.add_argument("--constraint", action="append", default=[], help='e.g. "p<=72"')
            p.add_argument("--min-efficiency", type=fraction, default=None)
            p.add_argument("--top", type=positive_int, default=5)


def _values(pairs: list[str]) -> dict[str, list[float]]:
    out = {}
    for item in pairs:
        if "=" not in item:
            raise UserError(f"{item!r}: give parameter values as NAME=V1,V2,...")
        name, text = item.split("=", 1)
        name = name.strip()
        if not name:
            raise UserError(f"{item!r}: no parameter name before '='")
        if name in out:
            raise UserError(f"{item!r}: parameter {name} given twice (give its values once: {name}=V1,V2,...)")
        try:
            out[name] = [float(v) for v in text.split(",")]
        except ValueError:
            raise UserError(f"{item!r}: values must be numbers") from None
        bad = [v for v in out[name] if not math.isfinite(v) or v <= 0]
        if bad:  # PMNF terms are powers and logarithms of the parameters: defined for values > 0
            raise UserError(f"{item!r}: {name}={bad[0]:g} is not a finite number > 0 (a model's terms "
                            "are powers and logarithms of its parameters)")
    return out


def _predict(args: argparse.Namespace) -> int:
    model, entry = load_entry(args.models, args.region, args.metric)
    table = predict(model, _values(args.values), args.level)
    kind = kind_of(args.metric, row=entry)  # as models.json declares it; one written before: guessed
    about = f"{kind.unit or 'no unit'}, {kind.better} is better{'' if kind.declared else ', guessed from the name'}"
    print(f"# {args.region}/{args.metric} ({about}): {model}")
    print(f"# {form_note(model)}")
    for note in entry.get("notes") or []:  # what the models table says of it (undecided form, regimes)
        print(f"# note: {note}")
    checks = entry.get("validation") or []  # the study's validation points: measured, never fitted
    for line in validation.describe(checks, args.metric, entry.get("level", 0.9), kind.suffix()):
        print(f"# {line}")
    print("\n".join(describe(model, table, args.metric, args.level, kind)))
    return 0


def _recommend(args: argparse.Namespace) -> int:
    model, entry = load_entry(args.models, args.region, args.metric)
    if not kind_of(args.metric, row=entry).is_time:
        raise UserError(f"--metric {args.metric}: recommend ranks configurations by run time and core-hours; "
                        "give a time metric (predict evaluates any metric)")
    if args.processes is not None and args.processes not in model.param_names:
        raise UserError(f"--processes {args.processes}: not a parameter of the model ({', '.join(model.param_names)})")
    table = recommend(model, _values(args.values), args.objective, args.processes, args.constraint,
                      args.min_efficiency, args.upper, args.level)
    print(f"# {args.region}/{args.metric}: {model}")
    print(f"# {form_note(model)}" + (f"; time = upper bound of the {100 * args.level:g} % interval" if args.upper else ""))
    if "efficiency_reference" in table.attrs:
        print(f"# efficiency = work at {table.attrs['efficiency_reference']} / work, as predicted")
    print(f"# best by {args.objective} of {len(table)} candidates:")
    print(table.head(args.top).to_string(index=False))
    return 0
