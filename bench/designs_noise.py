"""How often can a sparse design meet issue 17's held-out target when only the run noise stands in its
way? A known law, measured with this host's run-to-run noise, under the full grid and sparse designs.

    .venv/bin/python bench/designs_noise.py [--cv 0.043] [--k 3] [--held-out-k 3] [--trials 300]
                                            [--law forces|physics]

bench/designs.py judges one measurement: the sparse design's held-out error (mean relative error at
the 8 points beyond the grid, n 1200-1400, m 6-7, c 2.75-3) must be within 1.5x of the full grid's,
and the full grid's is near the noise floor of the held-out medians themselves. This bench asks how
often that can hold at all. Each trial draws every run of the full grid (5 x 5 x 5), of a second full
grid, of each sparse design and of the held-out points independently: the law's value times
exp(N(0, cv)); k runs per configuration, their mean fitted and their median held out, as bench/designs.py
does; the models are the models stage's (perfsweep.modeling.pipeline.fit_options: full or sparse
options). It prints per design the cost (the law's summed time, as a share of the full grid's;
bench/designs.py's core-hours also count each launch), the share of trials in which its held-out error is within 1.5x of the full grid's, and the median error.

Laws: ``forces`` (the full grids' step/forces model of bench/designs.py, 0.00373 + 3.37e-7 n^(2/3)
log2(n)^2 m^2 c^(8/3): inside the search space), ``physics`` (0.003 + 2e-7 n m^2 c^3 + 3e-7 n c^3: the
work per molecule pair with and without its sites). The default cv, 0.043, is the spread of log step/forces
time over a configuration's repetitions, root mean square over a full grid's configurations, median
over the full grids of 26 runs of bench/designs.py (2026-11-25/26; their median per-configuration CV
was 0.027: the noise has heavy tails). Measured in
those runs, the full grid's held-out error was 0.026 (median; here 0.023), lines through the
centre + 8's 0.034 (here 0.026): what remains is the modeler meeting a law it does not contain.

``--held-out-k`` sets the runs per held-out point (bench/designs.py: k), 0 judges against the law
itself. The fewer, the noisier the held-out medians and the more often a design is within 1.5x of the
full grid's error (law forces, 300 trials, a second full grid / lines through the largest values + 4:
k 1 100 % / 93 %, 3 97 % / 83 %, 10 94 % / 71 %, the law itself 59 % / 26 %, where the errors are
0.002 and 0.009).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path

import numpy as np

from perfsweep.config import load_config
from perfsweep.modeling.fit import fit_models
from perfsweep.modeling.pipeline import fit_options

sys.path.insert(0, str(Path(__file__).resolve().parent))
from designs import GRID, HELD_OUT  # noqa: E402  (the same grid and held-out points)

NAMES = list(GRID)
LAWS = {
    "forces": lambda n, m, c: 0.00373 + 3.37e-7 * n ** (2 / 3) * np.log2(n) ** 2 * m ** 2 * c ** (8 / 3),
    "physics": lambda n, m, c: 0.003 + 2e-7 * n * m ** 2 * c ** 3 + 3e-7 * n * c ** 3,
}
DESIGNS = {"sparse, lines through the centre + 8": {"base": "centre", "extra": 8},
           "sparse, lines through the largest values + 4 (default)": {"base": "largest", "extra": 4}}


def design_points(base: str, extra: int) -> np.ndarray:
    """The points of a sparse design of the grid, as the workflow plans them (Study.configurations)."""
    study = load_config({"app": {"name": "ljmd"}, "parameters": {"n": 600, "m": 3, "d": 0.5, "c": 2.0, "p": 1},
                         "studies": {"s": {"vary": GRID, "design": {"kind": "sparse", "base": base, "extra": extra}}}
                         }).study("s")
    return np.array([[c.params[k] for k in NAMES] for c in study.configurations()], float)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cv", type=float, default=0.043, help="run-to-run noise (sd of the log time)")
    ap.add_argument("--k", type=int, default=3, help="runs per configuration")
    ap.add_argument("--held-out-k", type=int, default=3,
                    help="runs per held-out point (0: judge against the law itself, without noise)")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--law", choices=sorted(LAWS), default="forces")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    law = LAWS[args.law]
    rng = np.random.default_rng(args.seed)
    full = np.array(list(itertools.product(*GRID.values())), float)
    held = np.array(list(itertools.product(*HELD_OUT.values())), float)
    designs = {"full grid (a second one)": (full, "full"),
               **{name: (design_points(**d), "sparse") for name, d in DESIGNS.items()}}

    def truth(x):
        return law(*x.T)

    def measure(x, k=args.k):
        return truth(x)[:, None] * np.exp(rng.normal(0.0, args.cv, (len(x), k)))

    def error(x, kind, held_medians):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit_models(x, [measure(x)], NAMES, options=fit_options("p", kind, 0, x, NAMES))[0]
        return float(np.mean(np.abs(model.predict(held) / held_medians - 1)))

    passed = {name: 0 for name in designs}
    errors = {name: [] for name in ["full grid", *designs]}
    for _ in range(args.trials):
        held_medians = np.median(measure(held, args.held_out_k), axis=1) if args.held_out_k else truth(held)
        reference = error(full, "full", held_medians)
        errors["full grid"].append(reference)
        for name, (x, kind) in designs.items():
            e = error(x, kind, held_medians)
            errors[name].append(e)
            passed[name] += e <= 1.5 * reference
    judge = f"{args.held_out_k} runs per held-out point" if args.held_out_k else "held out: the law itself"
    print(f"law {args.law}, run noise {args.cv:g} (sd of log time), k = {args.k}, {judge}, {args.trials} trials")
    print(f"  {'full grid':52} cost 1.000  held-out error {np.median(errors['full grid']):.3f} (median)")
    for name, (x, _) in designs.items():
        cost = truth(x).sum() / truth(full).sum()
        print(f"  {name:52} cost {cost:.3f}  held-out error {np.median(errors[name]):.3f}; within 1.5x of the "
              f"full grid's in {passed[name]} of {args.trials} ({100 * passed[name] / args.trials:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
