"""The overhead model's least-squares fit (perfsweep.overhead.fit_least_squares) against the search it
replaced, on the same data sets in the same run: seconds per fit and RMSD.

    .venv/bin/python bench/overhead_fit.py [--cases 40] [--seed 0]

Data sets: WIEN2k and NWChem of the paper's Table 1 (resources/reference-data/hofinger2018) and
``--cases`` synthetic ones: Eq. 1 with f_s in 1e-4..0.3, c in 0.1..1000 and b up to 1.5 (1 + c), on
4, 5, 8 or 8 (powers of 2 to 128) process counts, with 0, 2 or 10 % multiplicative noise (sets whose
noise makes a time non-positive are drawn again).

Baseline: the fit before it, kept here: bounded least squares in (f_s, b, c) from a fixed set of 54
starts (c0 in 0.5..300, f0 in 1e-4..0.1, b0 in 0.1..0.9 (1 + c0)) with a numeric Jacobian. Printed:
the total and the largest seconds per fit of each, their ratio, and how often the new fit's RMSD is
higher than the baseline's (by more than 1e-6 relative plus 1e-12 of the largest time, where both fit
exactly up to rounding: a worse optimum), lower, or the same. Exit status 1 if any is worse.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from perfsweep import overhead as ov

TABLE = Path(__file__).resolve().parents[1] / "resources" / "reference-data" / "hofinger2018" / "table1.csv"
LAYOUTS = (np.array([1, 2, 3, 4.0]), np.array([1, 2, 4, 8, 16.0]), np.array([1, 2, 3, 4, 5, 6, 7, 8.0]),
           2.0 ** np.arange(8))


def baseline_rmsd(n, t, t1: float) -> float:
    """The former fit_least_squares: 54 fixed starts in (f, b, c), numeric Jacobian; its RMSD."""
    n, t, t1 = ov.check_points(n, t, t1)
    scale = float(np.median(t))

    def resid(q):
        return (ov.model_time(n, t1, *q) - t) / scale

    best = None
    for c0 in (0.5, 3.0, 10.0, 30.0, 100.0, 300.0):
        for f0 in (1e-4, 0.01, 0.1):
            for bfrac in (0.1, 0.5, 0.9):
                try:
                    res = least_squares(resid, np.array([f0, bfrac * (1 + c0), c0]),
                                        bounds=([0, 0, 0], [1, np.inf, np.inf]),
                                        x_scale=[0.01, max(1.0, c0), max(1.0, c0)], max_nfev=2000)
                except ValueError:
                    continue
                if best is None or res.cost < best.cost:
                    best = res
    return ov.rmsd(n, t, t1, *best.x)


def data_sets(cases: int, seed: int) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    table = pd.read_csv(TABLE)
    out = []
    for app in ("wien2k", "nwchem"):
        d = table[["n", f"{app}_t"]].dropna()
        out.append((app, d["n"].to_numpy(float), d[f"{app}_t"].to_numpy(float),
                    float(d.loc[d["n"] == 1, f"{app}_t"].iloc[0])))
    rng = np.random.default_rng(seed)
    while len(out) < cases + 2:
        n = LAYOUTS[rng.integers(len(LAYOUTS))]
        f, c = 10 ** rng.uniform(-4, -0.5), 10 ** rng.uniform(-1, 3)
        b = rng.uniform(0.0, 1.5) * (1 + c)
        noise = rng.choice([0.0, 0.02, 0.1])
        t = ov.model_time(n, 1.0, f, b, c) * np.exp(rng.normal(0.0, noise, len(n)))
        if np.all(np.isfinite(t) & (t > 0)):
            out.append((f"synthetic {len(out) - 1} ({len(n)} points, noise {noise:.0%})", n, t, 1.0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40, help="synthetic data sets (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    times = {"baseline": [], "perfsweep": []}
    verdict = {"worse": 0, "better": 0, "same": 0}
    for name, n, t, t1 in data_sets(args.cases, args.seed):
        t0 = time.perf_counter()
        old = baseline_rmsd(n, t, t1)
        t_mid = time.perf_counter()
        new = ov.fit_least_squares(n, t, t1).rmsd
        times["baseline"].append(t_mid - t0)
        times["perfsweep"].append(time.perf_counter() - t_mid)
        tol = 1e-6 * old + 1e-12 * float(np.max(t))  # exact fits differ by rounding (1e-17 of the times)
        kind = "worse" if new > old + tol else "better" if new < old - tol else "same"
        verdict[kind] += 1
        print(f"  {name:<40} RMSD baseline {old:.6g}, now {new:.6g} ({kind}); "
              f"{times['baseline'][-1]:.2f} s vs {times['perfsweep'][-1]:.3f} s", flush=True)
    total = {k: sum(v) for k, v in times.items()}
    print(f"{len(times['perfsweep'])} data sets: baseline {total['baseline']:.1f} s in total (slowest "
          f"{max(times['baseline']):.2f} s), now {total['perfsweep']:.2f} s (slowest {max(times['perfsweep']):.3f} s): "
          f"{total['baseline'] / total['perfsweep']:.0f}x faster; RMSD worse in {verdict['worse']}, "
          f"lower in {verdict['better']}, the same in {verdict['same']}")
    return 1 if verdict["worse"] else 0


if __name__ == "__main__":
    sys.exit(main())
