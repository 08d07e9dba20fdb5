"""Sparse and adaptive designs against the full grid: same app, same machine, same study, same session.

    nice .venv/bin/python bench/designs.py [--steps 60] [--repetitions 3] [--cores 2] [--keep DIR]
    nice .venv/bin/python bench/designs.py --quick            # small grid, 5 steps, k = 2: end to end
    .venv/bin/python bench/designs.py --judge DIR [DIR ...]   # re-judge measurements kept with --keep

Measures the 3-parameter ljmd study T(n, m, c) (5 x 5 x 5 values, k repetitions) under three designs
and the held-out points in one ``perfsweep run`` of one config with four studies, so that Snakemake
runs all their jobs interleaved, in one session: ``T_full`` (``design: full``, 125 configurations),
``T_sparse`` (the design of ``--sparse``; default as the default config's: one line per parameter
through the grid's largest values plus 4 extra points, the first the opposite corner: 17; until
2026-11-26 lines through the centre plus the 8 corners, 21), ``T_adaptive`` (``design:
adaptive`` with the same start, then rounds of 2 points where the resampled models disagree most,
until the lead terms are stable; its rounds run after the session) and ``T_held_out`` (n, m, c each
one or two steps past its largest value: 8 points, where every design's models are judged). Every
design measures its own points (a configuration the designs share is run once per study). Measured
one design after the other, as this bench did until 2026-11-25, the designs and the held-out points
were minutes apart, and the host's speed drifted between them by up to 4 % (the medians of the
configurations two designs shared differed by a factor 0.96-1.02): as much as the held-out errors
being compared. ``--keep DIR`` keeps the measurement (DIR/results, DIR/config.yaml, DIR/bench.json),
``--judge DIR [DIR ...]`` judges kept measurements again without measuring; with several, it also counts the
measurements that met each target (the exit status is 0 only if all met all).

Run length: 60 steps per run by default (was 10): the median configuration (n 600, m 3, c 2) then
computes about 0.3 s, the largest (1000, 5, 2.5) about 3 s, the smallest about 20 ms (one step count
serves all configurations: the work grows about 500-fold across the grid). On an idle 2-core machine the
whole bench takes about 6-7.5 min (354-453 s on 2026-11-25, the adaptive rounds included).

The models are those of perfsweep's models stage: the sparse and adaptive designs' searched with one
lower-order term beside a product, the full grid's with two; m (a count from 1) and c (a cut-off in
sigma) with powers only (perfsweep.modeling.pipeline.fit_options, power_parameters).

Printed: per design the configurations, runs and core-hours (the records' wall time x processes)
with the share of the full grid's; for the run-time model (region all, metric time) and the dominant
region's (step/forces, time) side by side the models, their lead terms and lead orders per parameter,
the share of resampled models with the same lead, and their held-out errors (mean relative error of the
model's prediction against the measured median, beyond the grid; for sparse and adaptive also at the
full grid's points they did not measure). For step/forces the physics at fixed density expects
n m^2 c^3 (pairs within the cut-off sphere: n x d c^3 neighbours x m^2 site pairs); what the models find
is printed beside it, not judged.

Targets (issue 17), for the sparse design: at most 25 % of the full grid's core-hours; the same
dominant terms; held-out errors within 1.5x of the full grid's. "Same dominant terms" is judged, for
both judged models, by perfsweep.modeling.lead_orders.judge_lead, a rule fixed before this measurement
(see that module): the exact comparison of the lead strings is printed, and the verdict is PASS when
the lead orders agree (same dominant parameters; per parameter the growth over the grid's range within
a power of 1/4: n^(3/4) log2(n)^2 grows like n^1.08 over n = 200-1000), INCONCLUSIVE when they do not
but the full grid cannot decide its own lead order (fewer than half of its resampled models agree with
it) and at least 1/10 of them agree with the sparse design's, FAIL otherwise. The exit status is 0 only
if every sparse target passes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.modeling import Model
from perfsweep.modeling.lead_orders import format_orders, judge_lead, same_lead_order
from perfsweep.stats import core_seconds
from perfsweep.sweep.record import study_records

STUDIES = {"full": "T_full", "sparse": "T_sparse", "adaptive": "T_adaptive", "held-out": "T_held_out"}
GRID = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5], "c": [1.5, 1.75, 2.0, 2.25, 2.5]}
HELD_OUT = {"n": [1200, 1400], "m": [6, 7], "c": [2.75, 3.0]}
# --quick: the same shape (5 values per parameter, 2 x 2 x 2 held out) on small molecules counts
QUICK_GRID = {"n": [200, 250, 300, 350, 400], "m": [1, 2, 3, 4, 5], "c": [1.5, 1.75, 2.0, 2.25, 2.5]}
QUICK_HELD_OUT = {"n": [450, 500], "m": [6, 7], "c": [2.75, 3.0]}
DESIGNS = ("full", "sparse", "adaptive")
SPARSE = "{kind: sparse, extra: 4, base: largest}"
JUDGED = (("all", "time"), ("step/forces", "time"))  # the run-time model and the dominant region's


def config(results: Path, designs: dict, vary, held, steps: int, k: int) -> dict:
    studies = {STUDIES[name]: {"vary": vary, "fixed": {"d": 0.5, "p": 1}, "design": design}
               for name, design in designs.items()}
    studies[STUDIES["held-out"]] = {"vary": held, "fixed": {"d": 0.5, "p": 1}, "design": "full"}
    return {
        "app": {"name": "ljmd", "args": {"steps": steps}},
        "parameters": {"n": 600, "m": 2, "d": 0.5, "c": 2.0, "p": 1},
        "repetitions": k,
        "timeout": 300,
        "retries": 1,
        "results": str(results),
        "studies": studies,
    }


def run(workdir: Path, designs: dict, vary, held, args) -> float:
    """One ``perfsweep run`` of every design's study and the held-out points; returns the wall seconds."""
    results = workdir / "results"
    cfgfile = workdir / "config.yaml"
    cfgfile.parent.mkdir(parents=True, exist_ok=True)
    cfgfile.write_text(yaml.safe_dump(config(results, designs, vary, held, args.steps, args.repetitions),
                                      sort_keys=False))
    targets = [f"{results}/models/{study}/models.csv" for study in STUDIES.values()]  # rounds append theirs
    cmd = [str(Path(sys.executable).with_name("perfsweep")), "run", str(cfgfile), "--cores", str(args.cores),
           "--no-report", "--", "--quiet=all", *targets]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"perfsweep run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    rounds = proc.stdout.count("perfsweep: round ")
    print(f"  measured in {wall:.0f} s" + (f" (the adaptive design: {rounds + 1} rounds)" if rounds else ""),
          flush=True)
    return wall


def records(results: Path, name: str) -> dict[str, list[dict]]:
    return {cid: list(reps.values()) for cid, reps in study_records(results, STUDIES[name]).items()}


def medians(results: Path, name: str, key: tuple[str, str]) -> dict[str, tuple[dict, float]]:
    """config id -> (parameters, median) of a (region, metric) of a study: the aggregate stage's table."""
    agg = pd.read_csv(results / "tables" / STUDIES[name] / "aggregate.csv")
    sel = agg[(agg["region"] == key[0]) & (agg["metric"] == key[1])]
    return {row["config_id"]: ({k: row[k] for k in GRID}, float(row["median"])) for _, row in sel.iterrows()}


def models(results: Path, name: str) -> dict[tuple[str, str], Model]:
    data = json.loads((results / "models" / STUDIES[name] / "models.json").read_text())
    return {(m["region"], m["metric"]): Model.from_dict(m["model"]) for m in data}


def error(model: Model, points: dict[str, tuple[dict, float]]) -> float:
    """Mean relative error of the model's predictions at the points against their measured medians."""
    if not points:
        return float("nan")
    x = np.array([[float(p[n]) for n in model.param_names] for p, _ in points.values()])
    y = np.array([t for _, t in points.values()])
    return float(np.mean(np.abs(model.predict(x) - y) / y))


def load(results: Path, name: str) -> dict:
    if not (results / "models" / STUDIES[name] / "models.json").is_file():
        sys.exit(f"{results}: no models of study {STUDIES[name]} (not a measurement of bench/designs.py --keep)")
    recs = records(results, name)
    return {"records": recs, "models": models(results, name),
            "core_h": sum(core_seconds(r, PROCESS_COUNT) for rs in recs.values() for r in rs) / 3600}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, help="ljmd time steps per run (default 60; --quick: 5)")
    ap.add_argument("--repetitions", type=int, help="runs per configuration (default 3; --quick: 2)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small molecule counts, few steps: checks the bench end to "
                    "end in a few minutes (its figures judge nothing)")
    ap.add_argument("--sparse", default=SPARSE, metavar="YAML",
                    help=f"the sparse design as in a config (default: {SPARSE}, the default config's choice; "
                         "e.g. sparse: lines through the smallest values, 2 extra); the adaptive design starts "
                         "from its lines and extra points")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary directory)")
    ap.add_argument("--judge", metavar="DIR", nargs="+", help="judge the measurements kept in DIR... (--keep) again, "
                    "measure nothing; with several, also how many of them met each target")
    args = ap.parse_args()
    if args.judge:
        met: dict[str, list[str]] = {}  # target -> verdict per measurement
        for workdir in map(Path, args.judge):
            meta_path = workdir / "bench.json"
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            print(f"judging the measurement in {workdir} again (nothing is measured): "
                  + (", ".join(f"{k} {meta[k]}" for k in ("steps", "repetitions", "cores", "quick", "sparse", "load",
                                                          "measured_at", "wall") if k in meta) if meta else
                     "no bench.json, so its settings are unknown"))
            for target, verdict in judge(workdir / "results"):
                met.setdefault(target, []).append(verdict)
            print()
        runs = len(args.judge)
        every = sum(all(v[i] == "PASS" for v in met.values()) for i in range(runs))
        if runs > 1:
            print(f"over the {runs} measurements, the sparse design's targets:")
            for target, verdicts in met.items():
                print(f"  {target}: PASS in {verdicts.count('PASS')} of {runs}"
                      + (f" (INCONCLUSIVE in {verdicts.count('INCONCLUSIVE')})" if "INCONCLUSIVE" in verdicts else ""))
            print(f"  all of them: in {every} of {runs}")
        return 0 if every == runs else 1
    args.steps = args.steps or (5 if args.quick else 60)
    args.repetitions = args.repetitions or (2 if args.quick else 3)
    grid, held_grid = (QUICK_GRID, QUICK_HELD_OUT) if args.quick else (GRID, HELD_OUT)
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="perfsweep-designs-"))
    loadavg = os.getloadavg()[0]
    print(f"ljmd T(n, m, c): {' x '.join(str(len(v)) for v in grid.values())} grid{' (quick)' if args.quick else ''}, "
          f"k = {args.repetitions}, {args.steps} steps per run, {args.cores} cores, load {loadavg:.1f}; in {workdir}",
          flush=True)
    try:
        sparse = yaml.safe_load(args.sparse)
        sparse = {"kind": sparse} if isinstance(sparse, str) else sparse
        start = {k: v for k, v in sparse.items() if k in ("base", "extra")}
        designs = {"full": "full", "sparse": sparse, "adaptive": {**start, "kind": "adaptive"}}
        wall = run(workdir, designs, grid, held_grid, args)
        (workdir / "bench.json").write_text(json.dumps({
            "steps": args.steps, "repetitions": args.repetitions, "cores": args.cores, "quick": args.quick,
            "sparse": sparse,
            "load": round(loadavg, 1), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "grid": grid, "held_out": held_grid, "wall": round(wall)}, indent=1))
        return 0 if all(v == "PASS" for _, v in judge(workdir / "results")) else 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def judge(results: Path) -> list[tuple[str, str]]:
    """Print the designs' figures and verdicts from a measurement's results directory; the sparse
    design's targets and their verdicts."""
    return report({name: load(results, name) for name in DESIGNS}, results)


def report(out: dict, results: Path) -> list[tuple[str, str]]:
    full = out["full"]
    print()
    print(f"{'design':<9} {'configs':>7} {'runs':>5} {'core-h':>8} {'of full':>8}")
    for name, d in out.items():
        runs = sum(len(rs) for rs in d["records"].values())
        print(f"{name:<9} {len(d['records']):>7} {runs:>5} {d['core_h']:>8.4f} {d['core_h'] / full['core_h']:>8.1%}")
    errors: dict[tuple[str, str], dict[str, float]] = {}
    for key in JUDGED:
        region = key[0]
        held = medians(results, "held-out", key)
        grid_points = medians(results, "full", key)
        title = "run-time model" if region == "all" else "dominant region's model"
        print(f"\n{title} T(n, m, c) (region {region}, metric {key[1]}); held-out error = mean |pred - median| / "
              f"median at the {len(held)} points beyond the grid")
        if region == "step/forces":
            print("  physics at fixed density: n m^2 c^3 (lead order n^1, m^2, c^3); the models find:")
        errors[key] = {}
        for name, d in out.items():
            m = d["models"].get(key)
            if m is None:
                print(f"  {name:<9} no model")
                continue
            unmeasured = {cid: v for cid, v in grid_points.items() if cid not in d["records"]}
            errors[key][name] = error(m, held)
            print(f"  {name:<9} {m}")
            print(f"  {'':<9} lead {m.lead()}; lead order {format_orders(m)}")
            print(f"  {'':<9} adj. R^2 {m.adj_r2:.4f}, lead share {m.lead_share:.2f}; held-out error "
                  f"{errors[key][name]:.3f}" + (f", at the grid's {len(unmeasured)} unmeasured points "
                                                f"{error(m, unmeasured):.3f}" if unmeasured else ""))
    print("\nlead terms of every (region, metric) model, full | sparse | adaptive "
          "(= exactly the full grid's lead, ~ the same lead order, x neither):")
    exact = {name: 0 for name in out}
    close = {name: 0 for name in out}
    for key, fm in full["models"].items():
        texts = []
        for name in out:
            m = out[name]["models"].get(key)
            if m is None:
                texts.append("-")
                continue
            same, near = m.lead() == fm.lead(), same_lead_order(m, fm)
            exact[name] += same
            close[name] += near
            texts.append(m.lead() + ("" if name == "full" else " (=)" if same else " (~)" if near else " (x)"))
        print(f"  {key[0]}/{key[1]}: " + " | ".join(texts))
    print("  the full grid's lead: " + ", ".join(f"{n} {exact[n]} of {len(full['models'])} exactly, {close[n]} in lead "
                                                 f"order" for n in out if n != "full"))
    print()
    targets = []  # (target, verdict) of the sparse design: the issue's
    for name in DESIGNS[1:]:
        share = out[name]["core_h"] / full["core_h"]
        checks = [(f"core-hours {share:.1%} of full <= 25 %", "PASS" if share <= 0.25 else "FAIL", "core-hours <= 25 %")]
        for key in JUDGED:
            fm, m = full["models"].get(key), out[name]["models"].get(key)
            label = f"{key[0]}/{key[1]}"
            if fm is None or m is None:
                checks += [(f"{label}: same dominant terms: no model", "FAIL", f"{label}: same dominant terms"),
                           (f"{label}: held-out error: no model", "FAIL", f"{label}: held-out error within 1.5x")]
                continue
            j = judge_lead(fm, m)
            checks.append((f"{label}: exact lead {m.lead()} {'==' if j.exact else '!='} full's {fm.lead()} "
                           "(reported, not the criterion)", "same" if j.exact else "different", None))
            checks.append((f"{label}: same dominant terms: lead order {format_orders(m)} "
                           f"{'agrees with' if j.close else 'differs from'} full's {format_orders(fm)}; of the full "
                           f"grid's {len(fm.bootstrap)} resampled models {j.self_support:.0%} agree with its own lead "
                           f"order, {j.support:.0%} with {name}'s", j.verdict, f"{label}: same dominant terms"))
            base = errors[key].get("full", float("nan"))
            err = errors[key].get(name, float("nan"))
            checks.append((f"{label}: held-out error {err:.3f} <= 1.5 x {base:.3f}",
                           "PASS" if err <= 1.5 * base else "FAIL", f"{label}: held-out error within 1.5x"))
        for text, verdict, target in checks:
            print(f"{name}: {text}: {verdict}")
            if target and name == "sparse":  # the targets are sparse's
                targets.append((target, verdict))
    return targets


if __name__ == "__main__":
    sys.exit(main())
