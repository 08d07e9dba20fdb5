"""Would predictions averaged over the forms agree better between replicate sweeps than the one reported
form? Calibrated on synthetic replicate sweeps, reported on the committed real ones (issue 44).

    .venv/bin/python bench/averaging.py > bench/results/averaging.txt

The reported model is one form; the three quiet sweeps of bench/results/replicates/f301cd1-quiet reported three
forms of T(n, m) whose predictions lie up to 16 % apart at the held-back points. Model averaging
(Burnham and Anderson 2002, ch. 4) predicts with every form the measured data cannot tell apart (the
model's ``alternatives`` in models.json, each fitted to the measured means, with its criterion above the
best), weighted by exp(-criterion / (2 temperature)) (temperature 1: Akaike's weights), the reported
form with its own; the average is geometric (run times are positive). Temperature 0 is the reported
form alone. Nothing in the pipeline changes: this bench only asks what such a prediction would give.

- *Calibration* (chooses the temperature): synthetic triples of replicate sweeps with the noise measured
  on the 2-core test machines (tests/test_model_stability.py's ``sweep``: 2 repetitions, Student's t with
  3 degrees of freedom at 4 %, a drift of the host of 3 %): ljmd's work law T(n, m) over n = 400..2000,
  m = 1..5 (TRIPLES triples) and bench/modeler_vs_extrap.py's random one- and two-parameter functions on
  n = 200..1000, m = 1..5 (TRIPLES each), judged at 2-3x the grid's largest n (and m): per point how far
  the three sweeps' predictions lie apart (largest over smallest, minus 1) and the error against the
  noise-free law. Rule, fixed before the first run: of the temperatures whose median error is at most
  ERROR_SLACK above the reported form's, the one with the fewest points more than 10 % apart (ties: the
  smaller median error, then the lower temperature).
- *Reported* (did not choose it): the committed replicate sweeps of the default config,
  bench/results/replicates/f301cd1-quiet and -busy (their models.json and held-back aggregates as
  bench/replicates.py kept them), at temperature 0 (the reported form: bench/replicates.py's figures)
  and at the chosen temperature: per study-sweep the median error at the held-back points, per study
  how far the three sweeps' predictions lie apart, and the quiet targets of issue 44 (within 10 % at
  90 % of the points, within 15 % at all).

What was seen before the rule was fixed (2026-11-27, written down as bench/interval_forms.py does): the
quiet evidence's apart and errors at temperatures 1 and 3 (within 10 % at 16 of 18 points at both), and
the resamples' own geometric mean (bench/replicates.py's bootstrap; 16 of 18, but T(n, m, c)'s points
up to 8 % apart where the reported form's were up to 4.5 %). The synthetic suites and the busy evidence
were first run with the rule as written here, with 12 triples of each kind: seed 44 chose temperature 3
(64.6 % of the points more than 10 % apart against 78.1 % for the reported form), seed 45 temperature
1 (80.2 % against 83.3 %). Twelve triples were too few to tell; TRIPLES is 40 since, and with them the
averaging no longer brings the synthetic sweeps together (seed 44: 71.6 % both; seed 45: 70.9 % for the
reported form, at least 73.8 % for every temperature above 0).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy is imported
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from modeler_vs_extrap import evaluate, random_function  # noqa: E402
from replicates import HELD_BACK, apart, study_result  # noqa: E402
from test_model_stability import aggregate, ljmd_like, main_model, sweep  # noqa: E402

TEMPERATURES = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 8.0)
TRIPLES = 40
ERROR_SLACK = 0.005  # a temperature may raise the median error by at most half a percentage point
EVIDENCE = {"quiet": HERE / "results" / "replicates" / "f301cd1-quiet", "busy": HERE / "results" / "replicates" / "f301cd1-busy"}


def averaged(model, x: np.ndarray, temperature: float) -> np.ndarray:
    """The geometric mean of the predictions at ``x`` of the model and its alternatives, weighted by
    exp(-criterion / (2 temperature)); at temperature 0 the model's own."""
    if temperature <= 0 or not model.alternatives:
        return model.predict(x)
    forms = [model, *model.alternatives]
    crit = np.array([model.criterion if np.isfinite(model.criterion) else 0.0]
                    + [a.criterion for a in model.alternatives], dtype=float)
    w = np.exp(-(crit - crit.min()) / (2 * temperature))
    preds = np.array([f.predict(x) for f in forms])
    ok = np.all(preds > 0, axis=1)  # forms with a prediction <= 0 there take no part
    w = np.where(ok, w, 0.0)
    logs = np.log(np.where(preds > 0, preds, 1.0))
    return np.exp(w @ logs / w.sum())


def synthetic(seed: int) -> list[dict]:
    """Triples of models of replicate sweeps with the points beyond the grid and the law there."""
    rng = np.random.default_rng(seed)
    jobs = []
    ljmd_values = [[400, 800, 1200, 1600, 2000], [1, 2, 3, 4, 5]]
    for _ in range(TRIPLES):
        jobs.append(("ljmd T(n, m)", ljmd_like, ljmd_values, ["n", "m"], np.array([[4000.0, 3], [6000.0, 3], [4000.0, 5]])))
    grid = [[200, 400, 600, 800, 1000], [1, 2, 3, 4, 5]]
    for q in (1, 2):
        for _ in range(TRIPLES):
            terms, coeffs = random_function(rng, q)
            law = (lambda terms, coeffs: lambda *cols: evaluate(terms, coeffs, np.column_stack(cols)))(terms, coeffs)
            at = np.array([[2000.0, 3], [3000.0, 3], [2000.0, 10]])[:, :q] if q == 2 else np.array([[2000.0], [3000.0]])
            jobs.append((f"random, {q} parameter{'s' * (q > 1)}", law, grid[:q], ["n", "m"][:q], at))
    out = []
    for label, law, values, names, at in jobs:
        models = [main_model(aggregate(*sweep(rng, law, values), names), names, bootstrap=40)[0] for _ in range(3)]
        out.append({"label": label, "models": models, "at": at, "truth": law(*at.T)})
    return out


def judge_synthetic(triples: list[dict], temperature: float) -> tuple[float, float, int]:
    """Share of points more than 10 % apart, median error against the law, points."""
    aparts, errors = [], []
    for t in triples:
        preds = np.array([averaged(m, t["at"], temperature) for m in t["models"]])
        aparts += list(apart(preds))
        errors += list(np.abs(preds / t["truth"] - 1).ravel())
    aparts = np.array(aparts)
    return float(np.mean(aparts > 0.10)), float(np.median(errors)), len(aparts)


def judge_evidence(root: Path, temperature: float) -> tuple[list[str], list[float]]:
    """Lines per study (errors per sweep, how far apart), and every held-back point's apart."""
    dirs = sorted(root.glob("sweep*"))
    lines, every = [], []
    for name in HELD_BACK:
        results = [study_result(d, d / "heldback", name) for d in dirs]
        results = [r for r in results if r is not None and len(r["at"])]
        if not results:
            continue
        preds, errors = [], []
        for r in results:
            at = r["at"]
            p = averaged(r["model"], at[r["varied"]].to_numpy(float), temperature)
            preds.append(p)
            errors.append(np.median(np.abs(p / at["measured"].to_numpy(float) - 1)))
        a = apart(np.array(preds)) if len(preds) == len(dirs) else np.array([])
        every += list(a)
        lines.append(f"  {name:14s} median errors {', '.join(f'{e:.1%}' for e in errors)}; apart "
                     f"{', '.join(f'{v:.1%}' for v in a)}")
    return lines, every


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=44)
    args = ap.parse_args()
    start = time.perf_counter()
    triples = synthetic(args.seed)
    print(f"# bench/averaging.py --seed {args.seed}: calibration on {len(triples)} synthetic triples of replicate "
          f"sweeps (ljmd T(n, m), random 1- and 2-parameter functions; the host's noise), {TRIPLES} of each kind")
    print(f"{'temperature':>11} | {'points > 10 % apart':>19} | {'median error':>12} | points")
    scores = {}
    for t in TEMPERATURES:
        share, error, n = judge_synthetic(triples, t)
        scores[t] = (share, error)
        print(f"{t:>11g} | {share:>19.1%} | {error:>12.1%} | {n}")
    for label in dict.fromkeys(t["label"] for t in triples):
        part = [t for t in triples if t["label"] == label]
        cells = [judge_synthetic(part, t) for t in TEMPERATURES]
        print(f"  {label}: > 10 % apart " + ", ".join(f"{s:.0%}" for s, _, _ in cells)
              + "; median error " + ", ".join(f"{e:.1%}" for _, e, _ in cells))
    allowed = [t for t in TEMPERATURES if scores[t][1] <= scores[0.0][1] + ERROR_SLACK]
    chosen = min(allowed, key=lambda t: (scores[t][0], scores[t][1], t))
    print(f"chosen: temperature {chosen:g} (of those within {ERROR_SLACK:.1%} of the reported form's median error, "
          "the fewest points more than 10 % apart)")
    for kind, root in EVIDENCE.items():
        if not root.is_dir():
            continue
        for label, t in (("the reported form (temperature 0)", 0.0), (f"averaged at temperature {chosen:g}", chosen)):
            lines, every = judge_evidence(root, t)
            a = np.array(every, dtype=float)
            print(f"# {root.relative_to(HERE.parent)}: {label}")
            print("\n".join(lines))
            print(f"  predictions within 10 % of each other at {np.mean(a <= 0.10):.0%} of {len(a)} points, within "
                  f"15 % at {np.mean(a <= 0.15):.0%}; largest {np.nanmax(a):.1%}")
    print(f"# {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
