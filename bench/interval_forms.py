"""Calibrate the intervals' model averaging over forms (Model.form_spread's temperature) on one
synthetic suite and report the coverage of 90 % intervals on another (held out), before and after.

    .venv/bin/python bench/interval_forms.py                       # writes nothing; print to a file:
    .venv/bin/python bench/interval_forms.py > bench/results/interval_forms.txt

Both suites have known truth and judge the intervals at points beyond the grid (1.5-3x its largest
value in every parameter), where a new measurement (the mean of new repetitions) must fall within the
interval. No sweep's validation points take part (issue 44: the same 12 points chose the method and
measured it).

- *Calibration* (chooses the temperature): bench/modeler_vs_extrap.py's generator (one term per
  parameter, a product or a sum, Extra-P's 42 exponent pairs; constant in [1, 100), coefficients in
  [0.1, 10)) on its grids (x1 = 4..64, x2 = 10..50); half of the functions measured with 3
  repetitions of uniform noise of +-5 % or +-10 %, half with the host's noise below.
- *Held out* (reports the coverage): other functions (another seed) on another grid, the default
  sweep's kind (n = 200..1000, m = 1..5; or n alone), all with the noise measured on the 2-core test
  machines (tests/test_model_stability.py): 2 repetitions, Student's t with 3 degrees of freedom at
  4 %, a drift of the host between configurations of 3 %, new measurements the median of 3 runs under
  the same drift.

One constant is calibrated: the forms' temperature (TEMPERATURES; 0: no forms' spread; the
extrapolation error per doubling, Model.beyond, stays as it was: model.REACH 1). Coverage must hold for every kind of data, not on average (a suite's pooled coverage of
90 % hid 0.855 for one parameter under 0.94 for two), so of the pairs whose worst departure from 90 %
over the four strata (1 or 2 parameters x uniform or host noise) is within NEAR of the least, the one
of the narrowest intervals (median width). "Before" is temperature 0.

How this rule came about (2026-11-27, written down because it was not fixed before the first run):
the first run chose the temperature whose pooled calibration coverage was nearest 90 %, which chose
0 (pooled 0.897: the one-parameter functions' 0.855 hidden under the two-parameter ones' 0.94); a
second run calibrated the temperature and the extrapolation's share together by the strata rule,
which chose temperature 1 and no extrapolation error, and lowered the held-out coverage from 0.874 to
0.849; the extrapolation's share is not this bench's to remove, so it stays 1 and only the
temperature is calibrated here. The held-out figures of both earlier runs were seen before this
rule was fixed. That rule chose 0.25 (held out: 0.874 -> 0.881); then the consensus changed (the
majority of the resamples' lead orders, modeling.consensus) and the same rule chose 0: every
temperature moves the two-parameter strata's coverage (0.94-0.96 already) further from 90 % than it
brings the one-parameter functions with this machine's noise (0.835) nearer. So the forms' spread is
off by default (model.FORM_TEMPERATURE 0); the held-out line at temperature 1 (Akaike's weights) is
printed for comparison only. After the consensus went back to main's choice of the form (the
majority vote lost a regression in perfsweep compare's tests) the rule chose 0 again (held out 0.879
at width 0.403; temperature 1: 0.889 at 0.417).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy is imported
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from modeler_vs_extrap import evaluate, random_function  # noqa: E402
from perfsweep.modeling import FitOptions, fit_models  # noqa: E402
from perfsweep.modeling.model import FORM_TEMPERATURE, REACH  # noqa: E402

TEMPERATURES = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
LEVEL = 0.9
NEAR = 0.005  # worst departures within this of the least count as equal; of those the narrowest intervals win


def suite(rng, values: list, count: int, names: list[str], kinds: tuple[str, ...]) -> dict:
    """``count`` functions of modeler_vs_extrap's generator on the grid of ``values``, each measured
    with a noise of ``kinds`` (drawn): "uniform" (3 repetitions, +-5 % or +-10 %, new measurements the
    mean of 3) or "host" (2 repetitions, Student's t(3) at 4 % and a drift of the host between
    configurations of 3 %, new measurements the median of 3 runs under the same drift); the new
    measurements at 2 points 1.5-3x beyond the grid's largest value in every parameter."""
    x = np.array(list(itertools.product(*values)), float)
    sets, at, measured, kind = [], [], [], []
    for _ in range(count):
        terms, coeffs = random_function(rng, len(values))
        point = np.array([[v[-1] * rng.uniform(1.5, 3.0) for v in values] for _ in range(2)])
        truth, truth_at = evaluate(terms, coeffs, x), evaluate(terms, coeffs, point)
        kind.append(str(rng.choice(kinds)))
        if kind[-1] == "uniform":
            noise = rng.choice([0.05, 0.10])
            sets.append(truth[:, None] * (1 + rng.uniform(-noise, noise, (len(x), 3))))
            measured.append(truth_at * (1 + rng.uniform(-noise, noise, (2, 3))).mean(axis=1))
        else:
            total = len(x) + len(point)
            level = np.empty(total)
            level[rng.permutation(total)] = np.exp(np.cumsum(rng.normal(0, 0.015, total)) + rng.normal(0, 0.03, total))
            sets.append((truth * level[:len(x)])[:, None] * np.exp(0.04 * rng.standard_t(3, (len(x), 2))))
            measured.append(truth_at * level[len(x):] * np.median(np.exp(0.04 * rng.standard_t(3, (2, 3))), axis=1))
        at.append(point)
    return {"x": x, "sets": sets, "at": at, "measured": measured, "names": names, "kind": kind}


CALIBRATION = [np.array([4, 8, 16, 32, 64.0]), np.array([10, 20, 30, 40, 50.0])]  # modeler_vs_extrap's grids
HELD_OUT = [np.array([200, 400, 600, 800, 1000.0]), np.array([1, 2, 3, 4, 5.0])]  # the default sweep's kind


def fitted(suite: dict, seed: int) -> list:
    return fit_models(suite["x"], suite["sets"], suite["names"], options=FitOptions(bootstrap=40, seed=seed))


def judge(models: list, suite: dict, temperature: float, reach: float, kind: str | None = None) -> tuple[float, float, int]:
    """Coverage of the 90 % intervals, their median width (high - low over the prediction), points;
    with ``kind`` of the functions measured with that noise only."""
    covered, widths = [], []
    for model, at, measured, k in zip(models, suite["at"], suite["measured"], suite["kind"]):
        if model is None or kind not in (None, k):
            continue
        low, high = model.interval(at, LEVEL, temperature=temperature, reach=reach)
        pred = model.predict(at)
        ok = np.isfinite(low) & np.isfinite(high)
        covered += list(((low <= measured) & (measured <= high))[ok])
        widths += list(((high - low) / np.abs(pred))[ok])
    return float(np.mean(covered)), float(np.median(widths)), len(covered)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--functions", type=int, default=80, help="functions per suite and number of parameters")
    ap.add_argument("--seed", type=int, default=44)
    args = ap.parse_args()
    start = time.perf_counter()
    rng_cal, rng_held = np.random.default_rng(args.seed), np.random.default_rng(args.seed + 1000)
    cal = [suite(rng_cal, CALIBRATION[:q], args.functions, ["x1", "x2"][:q], ("uniform", "host")) for q in (1, 2)]
    held = [suite(rng_held, HELD_OUT[:q], args.functions, ["n", "m"][:q], ("host",)) for q in (1, 2)]
    cal_models = [fitted(s, args.seed) for s in cal]
    held_models = [fitted(s, args.seed + 1) for s in held]
    print(f"# bench/interval_forms.py --functions {args.functions} --seed {args.seed}: 90 % intervals at 1.5-3x "
          f"beyond the grid, {LEVEL:.0%} nominal")
    print("# calibration suite (x1 = 4..64, x2 = 10..50; half uniform noise, 3 reps; half the host's, 2 reps): "
          "chooses the temperature")
    strata = [(q, kind) for q in (0, 1) for kind in ("uniform", "host")]
    print(f"{'temperature':>11} | {'reach':>5} | " + " | ".join(f"{q + 1} par {k:>7}" for q, k in strata)
          + f" | {'worst':>6} | {'both':>6} | {'median width':>12}")
    scores = {}
    r = REACH
    for t in TEMPERATURES:
        cells = [judge(cal_models[q], cal[q], t, r, kind) for q, kind in strata]
        rows = [judge(m, s, t, r) for m, s in zip(cal_models, cal)]
        both = sum(c * n for c, _, n in rows) / sum(n for _, _, n in rows)
        worst = max(abs(c - LEVEL) for c, _, _ in cells)
        width = float(np.median([w for _, w, _ in rows]))
        scores[t] = (worst, width)
        print(f"{t:>11g} | {r:>5g} | " + " | ".join(f"{c:>13.3f}" for c, _, _ in cells)
              + f" | {worst:>6.3f} | {both:>6.3f} | {width:>12.3f}")
    least = min(w for w, _ in scores.values())
    chosen = min((k for k, (w, _) in scores.items() if w <= least + NEAR), key=lambda k: (scores[k][1], k))
    print(f"chosen: temperature {chosen:g} (the least worst departure from {LEVEL} of the four strata, within "
          f"{NEAR}, then the narrowest); this checkout's model.FORM_TEMPERATURE {FORM_TEMPERATURE:g}, reach {REACH:g}")
    print("# held-out suite (other functions, n = 200..1000, m = 1..5, 2 reps, t(3) 4 % noise, 3 % drift)")
    print(f"{'intervals':>40} | {'coverage 1 par':>14} | {'2 par':>6} | {'both':>6} | {'median width':>12} | points")
    for label, t in (("before (no forms' spread)", 0.0), (f"after (temperature {chosen:g})", chosen),
                     ("for comparison, not chosen: 1", 1.0)):
        rows = [judge(m, s, t, REACH) for m, s in zip(held_models, held)]
        points = sum(n for _, _, n in rows)
        both = sum(c * n for c, _, n in rows) / points
        width = float(np.median([w for _, w, _ in rows]))
        print(f"{label:>40} | {rows[0][0]:>14.3f} | {rows[1][0]:>6.3f} | {both:>6.3f} | {width:>12.3f} | {points}")
    print(f"# {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
