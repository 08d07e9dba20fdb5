"""Do the models hold when the sweep is measured again? Replicate sweeps of one config, side by side.

    .venv/bin/python bench/replicates.py --runs 3                  # 3 fresh sweeps of config/config.yaml
    .venv/bin/python bench/replicates.py --results A/results B/results C/results   # sweeps made before

For every study it prints each sweep's reported run-time model, its lead share (the share of the
resampled models that agree with its lead order), whether the sweeps' models agree in lead order
(modeling.lead_orders.same_lead_order, every pair both ways), how far the sweeps' predictions lie apart
at the study's validation points (predictions_apart: the furthest two sweeps' ratio, per point), and at
those points (the config's ``validate:``, measured beyond the grid and never fitted) the median
relative error and how many of the measured medians the 90 % intervals covered. Beside it, Extra-P 4.2.5 (its own venv,
perfsweep.modeling.extrap_env) fitted on the same runs and judged at the same points.

The models are fitted again from each sweep's aggregate table with the modeler of this checkout (the
models stage's own function, deterministic), so a changed modeler is judged on the same measurements.

Targets (issue "Models that hold when you measure again", three fresh sweeps on one idle machine):
in every study the three models agree in lead order and each lead share is >= 0.8; at the validation
points every study-sweep's median error is <= 15 % and the intervals cover 80-97 % of the points pooled;
no time model's constant is below -5 % of its smallest mean without a flag.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from modeler_real_data import MODEL_CODE, write_text  # noqa: E402 (the bench folder is not a package)

from perfsweep.config import load_config_file  # noqa: E402
from perfsweep.modeling import validation  # noqa: E402
from perfsweep.modeling.lead_orders import same_lead_order  # noqa: E402
from perfsweep.modeling.model import Model  # noqa: E402
from perfsweep.modeling.pipeline import LEVEL, fit_study_models, oversubscribed_rows, repetitions  # noqa: E402


def run_sweeps(config: str, count: int, cores: str) -> list[Path]:
    """``count`` fresh sweeps of ``config``, one after the other, each in a temp directory."""
    out = []
    for k in range(count):
        work = Path(tempfile.mkdtemp(prefix=f"perfsweep-replicate{k + 1}-"))
        t0 = time.perf_counter()
        with open(work / "perfsweep.log", "w") as log:
            rc = subprocess.call([str(Path(sys.executable).with_name("perfsweep")), "run", config, "--cores", cores,
                                  "--no-report"], cwd=work, stdout=log, stderr=subprocess.STDOUT)
        print(f"# sweep {k + 1}: {work}/results, {time.perf_counter() - t0:.0f} s, exit {rc} (log: {log.name})",
              flush=True)
        out.append(work / "results")
    return out


def study_fit(results: Path, study) -> dict | None:
    """The reported time model of a study of one sweep (fitted again from its aggregate), its notes,
    its evaluation at the validation points (modeling.validation), and the grid it was fitted to."""
    path = results / "tables" / study.name / "aggregate.csv"
    if not path.exists():
        return None
    agg = pd.read_csv(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, models, _ = fit_study_models(agg, study.name, list(study.vary), study.fixed, study.processes,
                                        design=study.design.kind)
    main = [m for m in models if m["region"] == "all" and m["metric"] == "time"]
    if not main:
        return None
    model = Model.from_dict(main[0]["model"])
    grid, checks = validation.split(agg[(agg["region"] == "all") & (agg["metric"] == "time")])
    grid = grid[~oversubscribed_rows(grid, study.processes, list(study.vary))]  # as the models stage fits
    return {"model": model, "notes": "; ".join(main[0].get("notes", [])), "grid": grid, "points": checks,
            "validation": main[0].get("validation", [])}


def predictions_apart(models: list[Model], points: np.ndarray) -> dict:
    """How far the sweeps' models' predictions lie apart at the same ``points`` (P x parameters): per
    point the largest over the smallest prediction, minus 1 (``apart``: 0.22 = the two sweeps furthest
    apart differ by 22 %), their median and maximum, and how many points lie more than 10 % apart.
    NaN where a prediction is not positive (no ratio) or with fewer than two models."""
    points = np.atleast_2d(np.asarray(points, dtype=float))
    if len(models) < 2 or not points.size:
        nan = float("nan")
        return {"apart": np.full(len(points), nan), "median": nan, "max": nan, "over_10": 0, "points": len(points)}
    preds = np.array([m.predict(points) for m in models])  # models x points
    with np.errstate(divide="ignore", invalid="ignore"):
        apart = np.where(np.all(preds > 0, axis=0), preds.max(axis=0) / preds.min(axis=0) - 1.0, np.nan)
    finite = apart[np.isfinite(apart)]
    return {"apart": apart, "median": float(np.median(finite)) if len(finite) else float("nan"),
            "max": float(np.max(finite)) if len(finite) else float("nan"), "over_10": int(np.sum(finite > 0.10)),
            "points": len(points)}


def validation_points(fits: list[dict | None], names: list[str]) -> np.ndarray:
    """The validation points of all sweeps of a study (their parameters, each point once)."""
    rows = {tuple(float(p["parameters"][n]) for n in names) for fit in fits if fit for p in fit["validation"]}
    return np.array(sorted(rows), dtype=float).reshape(len(rows), len(names))


def extrap_predictions(jobs: list[tuple[list[str], pd.DataFrame, pd.DataFrame]]) -> list[dict]:
    """Extra-P 4.2.5's model of each job's grid (all repetitions) and its predictions at the job's
    validation points; {"error": ...} where Extra-P fails."""
    with tempfile.TemporaryDirectory() as tmp:
        requests = []
        for j, (names, grid, points) in enumerate(jobs):
            path = Path(tmp) / f"job{j}.txt"
            write_text(path, names, grid[names].to_numpy(float), [("all", repetitions(grid))])
            requests.append([str(path), points[names].to_numpy(float).tolist()])
        req = Path(tmp) / "requests.json"
        req.write_text(json.dumps(requests))
        try:
            from perfsweep.modeling.extrap_env import run_extrap

            out = json.loads(run_extrap(MODEL_CODE, str(req)))
        except Exception as exc:  # no venv to be had, Extra-P failed: say so beside the figures
            return [{"error": str(exc).splitlines()[0][:120]} for _ in jobs]
    return [out[path]["s0"] for path, _ in requests]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--runs", type=int, default=3, help="fresh sweeps to make (without --results)")
    ap.add_argument("--results", nargs="+", help="results directories of earlier sweeps of --config")
    ap.add_argument("--cores", default="2")
    ap.add_argument("--no-extrap", action="store_true", help="skip Extra-P (its venv takes 1-2 minutes to make)")
    args = ap.parse_args()
    sweep = load_config_file(args.config)
    dirs = [Path(r) for r in args.results] if args.results else run_sweeps(args.config, args.runs, args.cores)
    print(f"# {len(dirs)} sweeps of {args.config}; load average {os.getloadavg()[0]:.2f}")
    fits = {s.name: [study_fit(d, s) for d in dirs] for s in sweep.studies}
    jobs, where = [], []
    for s in sweep.studies:
        for k, fit in enumerate(fits[s.name]):
            if fit is not None and len(fit["points"]):
                jobs.append((list(s.vary), fit["grid"], fit["points"]))
                where.append((s.name, k))
    extrap = dict(zip(where, extrap_predictions(jobs))) if jobs and not args.no_extrap else {}
    covered, worst, agree_all, shares_ok, unflagged, apart_all = [], 0.0, True, True, 0, []
    for s in sweep.studies:
        print(f"\n## {s.name}: T({', '.join(s.vary)})")
        models = []
        for k, fit in enumerate(fits[s.name]):
            if fit is None:
                print(f"  sweep {k + 1}: no model")
                continue
            model, points = fit["model"], fit["validation"]
            models.append(model)
            shares_ok &= bool(model.lead_share >= 0.8)
            smallest = float(np.min(model.values))
            unflagged += bool(model.coefficients[0] < -0.05 * smallest and "negative constant" not in fit["notes"])
            print(f"  sweep {k + 1}: {model}\n           lead {model.lead()}, share {model.lead_share:.2f}"
                  + (f"; {fit['notes']}" if fit["notes"] else ""))
            if points:
                measured = np.array([p["measured"] for p in points])
                err = np.abs(np.array([p["predicted"] for p in points]) - measured) / measured
                hit = np.array([p["covered"] for p in points])
                covered += list(hit)
                worst = max(worst, float(np.median(err)))
                text = f"           validation: median error {np.median(err):.1%} (max {np.max(err):.1%}), " \
                       f"{int(hit.sum())} of {len(hit)} in the {LEVEL:.0%} interval"
                ex = extrap.get((s.name, k))
                if ex and "error" not in ex:
                    ex_err = np.abs(np.array(ex["predicted"]) - measured) / measured
                    text += f"; Extra-P {np.median(ex_err):.1%}: {ex['text']}"
                elif ex:
                    text += f"; Extra-P failed: {ex['error']}"
                print(text)
        agree = len(models) > 1 and all(same_lead_order(a, b) for a in models for b in models if a is not b)
        agree_all &= agree
        print(f"  lead orders {'agree' if agree else 'DIFFER'} over {len(models)} sweeps: "
              + " | ".join(m.lead() for m in models))
        apart = predictions_apart(models, validation_points(fits[s.name], list(s.vary)))
        if apart["points"] and np.isfinite(apart["median"]):
            apart_all.append(apart)
            print(f"  predictions at the {apart['points']} validation point(s) apart by a median of "
                  f"{apart['median']:.1%}, at most {apart['max']:.1%}; {apart['over_10']} more than 10 % apart")
    print("\n## targets")
    print(f"  every study's models agree in lead order: {'yes' if agree_all else 'NO'}")
    print(f"  every lead share >= 0.8: {'yes' if shares_ok else 'NO'}")
    if apart_all:
        spread = np.concatenate([a["apart"] for a in apart_all])
        spread = spread[np.isfinite(spread)]
        print(f"  the sweeps' predictions within 10 % of each other at {np.mean(spread <= 0.10):.0%} of "
              f"{len(spread)} validation points (target 90 %), within 15 % at {np.mean(spread <= 0.15):.0%} "
              "(target all)")
    if covered:
        print(f"  worst study-sweep median error at the validation points: {worst:.1%} (target <= 15 %)")
        print(f"  {LEVEL:.0%} intervals covered {np.mean(covered):.0%} of {len(covered)} validation points "
              "(target 80-97 %)")
    print(f"  negative constants below -5 % of the smallest mean without a flag: {unflagged}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
