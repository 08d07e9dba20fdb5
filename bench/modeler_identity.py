"""Whether this tree's modeler gives the same models as another git revision's (a speed change must not
change a result).

    .venv/bin/python bench/modeler_identity.py                       # against main, 100 functions per cell
    .venv/bin/python bench/modeler_identity.py --against HEAD~1 --functions 20

Both trees model the same inputs, each in its own process (the other revision's src/ from
``git archive``): every cell of bench/modeler_vs_extrap.py (seed 2026) and of bench/modeler_layouts.py
(seed 2027), and batches that take the other paths: missing and single repetitions, zeros, negative
values, all zeros (also alone), unusable sets (None and a warning), unweighted fits, negative exponents, and
resamples (``bootstrap``: consensus, scatter, the resamples' models). Compared per model: the text,
the terms, the coefficients (to 1e-12 relative) and every statistic (exactly); the resamples'
coefficients too. Prints the number of models, the differences, and exits 1 on any.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

STATISTICS = ("adj_r2", "r2", "smape", "rss", "cv_score", "lead_share", "runner_up_share", "scatter")


def cases(functions: int):
    """(name, x, ys, param names, options) of every batch; the same on every run."""
    import modeler_layouts as layouts
    import modeler_vs_extrap as vs
    from perfsweep.modeling import FitOptions

    names = ["x1", "x2", "x3"]
    rng = np.random.default_rng(2026)
    for q in (1, 2, 3):
        for noise in vs.NOISE:
            cell = vs.make_cell(rng, q, noise, functions)
            yield f"grid {q}p {noise:.0%}", cell[0]["x"], [f["reps"] for f in cell], names[:q], None
    rng = np.random.default_rng(2027)
    for name in layouts.LAYOUTS:
        for q in (1, 2, 3):
            for noise in layouts.NOISE:
                cell = layouts.make_cell(rng, name, q, noise, max(4, functions // 3))
                yield f"{name} {q}p {noise:.0%}", cell[0]["x"], [f["reps"] for f in cell], names[:q], None
    rng = np.random.default_rng(7)
    for q in (1, 2, 3):
        cell = vs.make_cell(rng, q, 0.05, 24)
        x, ys = cell[0]["x"], [f["reps"].copy() for f in cell]
        ys[0][1, 2:] = np.nan  # fewer repetitions at one point
        ys[1] = ys[1][:, 0]  # one repetition
        ys[2] = ys[2][:, :3]  # three repetitions
        ys[3][0, 0] = 0.0  # a zero: unweighted
        ys[4] = ys[4] - np.median(ys[4])  # negative values: also without the sign rule
        ys[5] = np.zeros_like(ys[5])  # all zeros: the model 0
        ys[6] = np.full_like(ys[6], 3.5)  # a constant
        ys[7] = ys[7] * 1e-150  # tiny values
        ys[8][2, 1] = np.inf  # unusable: None and a warning
        ys[9] = ys[9][:-1]  # the wrong length
        ys[10][:, :] = ys[10][:, :1]  # identical repetitions
        yield f"mixed {q}p", x, ys, names[:q], None
        yield f"mixed {q}p unweighted", x, ys, names[:q], FitOptions(weighting="none")
        yield f"mixed {q}p negative exponents", x, ys[:12], names[:q], FitOptions(negative_params=("x1",))
        yield f"resampled {q}p", x, ys[:8] + ys[10:14], names[:q], FitOptions(bootstrap=6, seed=3)
        yield f"zeros alone {q}p", x, [ys[5], ys[5][:, 0]], names[:q], None
        yield f"bad alone {q}p", x, [ys[8], ys[9]], names[:q], None
        yield f"none {q}p", x, [], names[:q], None


def dump(path: str, functions: int) -> None:
    import perfsweep
    from perfsweep.modeling import fit_models

    src = os.environ.get("PYTHONPATH", "")
    if not Path(perfsweep.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"perfsweep imported from {perfsweep.__file__}, not from {src}")
    out = {}
    for name, x, ys, names, options in cases(functions):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            models = fit_models(x, ys, names, options=options)
        out[name] = {"models": [None if m is None else m.to_dict() for m in models],
                     "warnings": [str(w.message) for w in caught]}
    Path(path).write_text(json.dumps(out))


def relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def compare(ref: dict, new: dict) -> tuple[int, list[str]]:
    """The number of models compared and every difference."""
    count, diffs = 0, []
    for case, r in ref.items():
        n = new[case]
        if r["warnings"] != n["warnings"]:
            diffs.append(f"{case}: warnings {r['warnings']} vs {n['warnings']}")
        for k, (a, b) in enumerate(zip(r["models"], n["models"], strict=True)):
            count += 1
            where = f"{case} #{k}"
            if a is None or b is None:
                if a is not b:
                    diffs.append(f"{where}: {a and a['text']} vs {b and b['text']}")
                continue
            for key in ("text", "terms", "lead", "runner_up", "processes", "reciprocal", "scatter_relative",
                        "extrapolation", "values", "points"):
                if a[key] != b[key]:
                    diffs.append(f"{where}: {key} {a[key]} vs {b[key]}")
            for key in STATISTICS:
                if a[key] != b[key]:
                    diffs.append(f"{where}: {key} {a[key]!r} vs {b[key]!r}")
            pairs = [(a, b)] + list(zip(a["bootstrap"], b["bootstrap"]))
            if len(a["bootstrap"]) != len(b["bootstrap"]):
                diffs.append(f"{where}: resamples differ in number")
            for u, v in pairs:
                if u["terms"] != v["terms"] or len(u["coefficients"]) != len(v["coefficients"]):
                    diffs.append(f"{where}: terms {u['terms']} vs {v['terms']}")
                    continue
                worst = max((relative(c, d) for c, d in zip(u["coefficients"], v["coefficients"])), default=0.0)
                if worst > 1e-12:
                    diffs.append(f"{where}: coefficients {u['coefficients']} vs {v['coefficients']} ({worst:.1e})")
    return count, diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", default="main", help="git revision to compare with (default: main)")
    ap.add_argument("--functions", type=int, default=100, help="functions per cell of modeler_vs_extrap")
    ap.add_argument("--dump", help=argparse.SUPPRESS)  # internal: write this tree's models as JSON
    args = ap.parse_args()
    if args.dump:
        dump(args.dump, args.functions)
        return 0
    repo = BENCH.parent
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", args.against, "src"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        files = {}
        for label, src in (("reference", Path(tmp) / "src"), ("this tree", repo / "src")):
            files[label] = Path(tmp) / f"{label.replace(' ', '_')}.json"
            env = dict(os.environ, PYTHONPATH=str(src))
            subprocess.run([sys.executable, __file__, "--dump", str(files[label]), "--functions", str(args.functions)],
                           env=env, check=True)
        ref, new = (json.loads(files[label].read_text()) for label in ("reference", "this tree"))
    count, diffs = compare(ref, new)
    print(f"{count} models in {len(ref)} batches, this tree against {args.against}: "
          f"{'identical' if not diffs else f'{len(diffs)} differences'}")
    for line in diffs[:40]:
        print("  " + line)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
