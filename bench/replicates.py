"""Do the models hold when the sweep is measured again, on a quiet or a busy host? Replicate ``make run``s
of one commit, each judged at points beyond its grid that its config does not name.

    .venv/bin/python bench/replicates.py --runs 3 --out bench/results/replicates/faf914e-quiet
    .venv/bin/python bench/replicates.py --runs 3 --busy --out bench/results/replicates/15dbcfd-busy \
        --against bench/results/replicates/faf914e-quiet
    .venv/bin/python bench/replicates.py --from bench/results/replicates/faf914e-quiet   # judge committed sweeps again

A sweep is ``make run`` in a fresh clone of this repository's committed HEAD (venv set-up included, the
default config/config.yaml, its decide: budget), timed. Right after it, in the same clone and with its
venv, the bench measures the held-back points (HELD_BACK: 1.4-3x beyond the default grid in n, m, c and
frames, and p = 1, 2 beyond it in n and frames; none of them named by the config) as a sweep of their
own (``perfsweep run`` of a config the bench writes: the default config's app, launcher and parameters,
one study per line of points, 3 repetitions). With ``--busy`` a load generator keeps one core busy half
of every second (a process that spins 0.5 s and sleeps 0.5 s, its own affinity free) while ``make run``
runs, and is stopped before the held-back runs, so those measure what the host gives when quiet.

Per study and sweep it prints the sweep's own run-time model (results/models/<study>/models.json, as the
user got it), its lead share, how measuring until decided ended (models.csv's ``measuring``), and at the
held-back points the median error of the prediction against the measured median, the largest error,
how many measured medians the 90 % interval covered and the interval's median width (high - low over
the prediction). Per study, how far the sweeps' predictions lie apart at the same points (the largest
over the smallest prediction, minus 1). Beside them, with ``--extrap``, Extra-P 4.2.5 (its own venv,
perfsweep.modeling.extrap_env) fitted on the same fitted runs and judged at the same points.

``--out DIR`` keeps the evidence: per sweep the aggregates, the models tables, the time models'
models.json entries, the decide.json of measuring until decided, make run's log and the held-back
aggregates, gzipped, the printed output (output.txt) and
summary.json (the figures the targets are judged by); ``--from DIR`` prints the same judgement from them.

Targets (issue "Models decided by measurement"):
- quiet: every study-sweep's median error <= 15 %; the sweeps' predictions within 10 % of each other at
  90 % of the points and within 15 % at all; 90 % intervals covering 80-97 % of the points (median width
  printed); every make run <= 5 minutes;
- busy (--against the quiet output): the p = 1 studies end decided within the quiet bounds; every other
  study ends decided within them or with "budget spent" and the form undecided (or "lack of fit": no
  smooth form fits its medians within their noise, so more repetitions could not decide it, printed
  apart); no study that calls its
  form decided (lead share >= 0.8) misses a held-back point by more than 30 %; intervals cover >= 80 %,
  their median width at most 2x the quiet sweeps'.
"""

from __future__ import annotations

import argparse
from collections import Counter
import gzip
import io
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from busy import Load  # noqa: E402 (the bench folder is not a package)
from modeler_real_data import MODEL_CODE, write_text  # noqa: E402

from perfsweep.modeling import validation  # noqa: E402
from perfsweep.modeling.lead_orders import same_lead_order  # noqa: E402
from perfsweep.modeling.model import Model  # noqa: E402
from perfsweep.modeling.pipeline import LEVEL, oversubscribed_rows, repetitions  # noqa: E402

# Lines of held-back points per study of config/config.yaml: the varied values of the line and where the
# study's other varied parameters stand. Grid tops: T_n_m n 2000, m 5; T_n_m_c n 1200, m 5, c 2.5;
# T_n_p n 1800 (p 1-2 unshared); rmsd_frames_p frames 2400. Every point is 1.4-2.4x beyond one of them.
HELD_BACK = {
    "T_n_m": [({"n": [3200, 4800]}, {"m": 3}), ({"m": [7, 8]}, {"n": 800})],
    "T_n_m_c": [({"n": [1800, 2800]}, {"m": 3, "c": 2.0}), ({"m": [7, 8]}, {"n": 600, "c": 2.0}),
                ({"c": [3.5, 4.0]}, {"n": 600, "m": 3})],
    "T_n_p": [({"n": [2700, 4200], "p": [1, 2]}, {})],
    "rmsd_frames_p": [({"frames": [3600, 5600], "p": [1, 2]}, {})],
}
HELD_BACK_REPETITIONS = 3
LINE = "__"  # a held-back study's name: <study>__<k>


def held_back_config(config: dict) -> dict:
    """The config of the held-back runs: the default config's app, launcher and parameters, one study
    per line of HELD_BACK (its fixed values those of the study with the line's other parameters)."""
    out = {k: config[k] for k in ("app", "launcher", "parameters", "timeout", "retries") if k in config}
    out.update(repetitions=HELD_BACK_REPETITIONS, studies={})
    for name, lines in HELD_BACK.items():
        study = config["studies"][name]
        for k, (vary, at) in enumerate(lines):
            entry = {"vary": vary, "fixed": {**study.get("fixed", {}), **at}}
            for key in ("app", "parameters"):
                if key in study:
                    entry[key] = study[key]
            out["studies"][f"{name}{LINE}{k}"] = entry
    return out


def run(cmd: list[str], cwd: Path, log: Path, env: dict | None = None) -> tuple[int, float]:
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.call(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    return rc, time.perf_counter() - t0


def make_sweep(k: int, busy: bool, config: dict) -> tuple[Path, dict]:
    """A fresh clone of HEAD, its ``make run`` (with the load if ``busy``), then its held-back runs."""
    clone = Path(tempfile.mkdtemp(prefix=f"perfsweep-replicate{k}-")) / "perfsweep"
    subprocess.check_call(["git", "clone", "-q", str(REPO), str(clone)])
    commit = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=clone, text=True).strip()
    load = Load() if busy else None
    try:
        rc, wall = run(["make", "run"], clone, clone / "make-run.log", env={**os.environ, "CORES": "2"})
        load_avg = os.getloadavg()[0]
    finally:
        if load:
            load.stop()
    hb = clone / "heldback"
    hb.mkdir()
    held = held_back_config(config)
    (hb / "heldback.yaml").write_text(yaml.safe_dump(held, sort_keys=False))
    targets = [f"results/tables/{name}/aggregate.csv" for name in held["studies"]]
    rc_hb, wall_hb = run([str(clone / ".venv/bin/perfsweep"), "run", "heldback.yaml", "--cores", "2", "--no-report",
                          "--", *targets], hb, hb / "perfsweep.log")  # the aggregates only: no models of 2 points
    info = {"sweep": k, "commit": commit, "busy": busy, "make_run_s": round(wall, 1), "make_run_exit": rc,
            "held_back_s": round(wall_hb, 1), "held_back_exit": rc_hb, "load_average_end": round(load_avg, 2)}
    print(f"# sweep {k}: {clone}, commit {commit}, make run {wall:.0f} s (exit {rc}), held-back runs "
          f"{wall_hb:.0f} s (exit {rc_hb}), load average {load_avg:.1f}", flush=True)
    return clone, info


def keep(clone: Path, dest: Path, info: dict) -> None:
    """The evidence of one sweep, gzipped, under ``dest``."""
    def put(src: Path, rel: str, text: str | None = None) -> None:
        out = dest / (rel + ".gz")
        out.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(out, "wt") as fh:
            fh.write(text if text is not None else src.read_text())

    res = clone / "results"
    for name in HELD_BACK:
        agg = res / "tables" / name / "aggregate.csv"
        if agg.exists():
            put(agg, f"tables/{name}/aggregate.csv")
        if (res / "models" / name / "models.csv").exists():
            put(res / "models" / name / "models.csv", f"models/{name}/models.csv")
        mj = res / "models" / name / "models.json"
        if mj.exists():
            time_entry = [e for e in json.loads(mj.read_text()) if e["region"] == "all" and e["metric"] == "time"]
            put(mj, f"models/{name}/models.json", json.dumps(time_entry))
        if (res / "plan" / name / "decide.json").exists():
            put(res / "plan" / name / "decide.json", f"plan/{name}/decide.json")
    put(clone / "make-run.log", "make-run.log")
    for agg in sorted((clone / "heldback" / "results" / "tables").glob(f"*{LINE}*/aggregate.csv")):
        put(agg, f"heldback/{agg.parent.name}/aggregate.csv")
    (dest / "sweep.json").write_text(json.dumps(info, indent=1) + "\n")


def read(root: Path, rel: str) -> str | None:
    for p in (root / rel, root / (rel + ".gz")):
        if p.exists():
            return gzip.open(p, "rt").read() if p.suffix == ".gz" else p.read_text()
    return None


def csv(root: Path, rel: str) -> pd.DataFrame | None:
    text = read(root, rel)
    return None if text is None else pd.read_csv(io.StringIO(text))


def study_result(root: Path, held: Path, name: str) -> dict | None:
    """A study's time model of one sweep (results ``root``), its models-table row, and its held-back
    points (``held``: the held-back runs' results) evaluated (modeling.validation.evaluate)."""
    entries = read(root, f"models/{name}/models.json")
    table = csv(root, f"models/{name}/models.csv")
    if entries is None or table is None:
        return None
    entry = [e for e in json.loads(entries) if e["region"] == "all" and e["metric"] == "time"]
    row = table[(table["region"] == "all") & (table["metric"] == "time")]
    if not entry or not entry[0].get("model") or not len(row):
        return None
    model = Model.from_dict(entry[0]["model"])
    varied = list(model.param_names)
    at = held_back(model, held, name)
    measuring = row.iloc[0].get("measuring")
    return {"model": model, "row": row.iloc[0], "at": at, "varied": varied,
            "measuring": measuring if isinstance(measuring, str) else "",
            "processes": entry[0].get("processes")}


def held_back(model: Model, held: Path, name: str) -> pd.DataFrame:
    """The study's held-back points (``held``: the held-back runs' results) evaluated by ``model``
    (modeling.validation.evaluate), with each interval's width over the prediction."""
    varied = list(model.param_names)
    points = []
    for k, (_, at) in enumerate(HELD_BACK[name]):
        agg = csv(held, f"{name}{LINE}{k}/aggregate.csv")
        if agg is None:
            continue
        agg = agg[(agg["region"] == "all") & (agg["metric"] == "time")].copy()
        for p, v in at.items():
            agg[p] = v
        points.append(agg[["config_id", *varied, "median"]])
    pts = pd.concat(points, ignore_index=True) if points else pd.DataFrame(columns=["config_id", *varied, "median"])
    at = validation.evaluate(model, pts, varied, LEVEL)
    at["width"] = (at["high"] - at["low"]) / at["predicted"]
    return at


def extrap_errors(jobs: list[tuple[list[str], pd.DataFrame, pd.DataFrame]]) -> list[dict]:
    """Extra-P 4.2.5's model of each job's fitted runs and its predictions at the job's held-back points."""
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


def fitted_grid(root: Path, name: str, varied: list[str], processes: str | None) -> pd.DataFrame | None:
    agg = csv(root, f"tables/{name}/aggregate.csv")
    if agg is None:
        return None
    grid, _ = validation.split(agg[(agg["region"] == "all") & (agg["metric"] == "time")])
    return grid[~oversubscribed_rows(grid, processes or "p", varied)]


def reproduced(dirs: list[Path], name: str, fits: list[dict]) -> str:
    """How far the sweeps' medians of the same fitted configurations lie apart (per configuration the
    standard deviation of their logs, the median over configurations), against what their repetitions
    say (per configuration and sweep the standard error of the log mean), and how far the sweeps'
    models left the medians (their relative scatter): measured again, the data or the model?"""
    grids = [fitted_grid(d, name, f["varied"], f["processes"]) for d, f in zip(dirs, fits)]
    grids = [g.set_index("config_id") for g in grids if g is not None]
    common = sorted(set.intersection(*(set(g.index) for g in grids))) if grids else []
    between = [np.std(np.log([g.loc[c, "median"] for g in grids]), ddof=1) for c in common]
    within = []
    for g in grids:
        for c in common:
            v = np.log(np.array(str(g.loc[c, "values"]).split(), dtype=float))
            if len(v) > 1:
                within.append(np.std(v, ddof=1) / np.sqrt(len(v)))
    return (f"  the {len(common)} configurations all sweeps fitted: medians apart between the sweeps by "
            f"{np.median(between):.1%} (standard deviation), their repetitions' standard error {np.median(within):.1%}; "
            f"the models left {', '.join(format(f['model'].scatter, '.1%') for f in fits)} around the medians")


def apart(preds: np.ndarray) -> np.ndarray:
    """Per point (columns), the largest over the smallest of the sweeps' predictions (rows), minus 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.all(preds > 0, axis=0), preds.max(axis=0) / preds.min(axis=0) - 1.0, np.nan)


def judge(dirs: list[Path], config: dict, extrap: bool, against: dict | None, busy: bool) -> tuple[list[str], dict]:
    lines: list[str] = []
    say = lines.append
    infos = [json.loads(read(d, "sweep.json") or "{}") for d in dirs]
    for d, info in zip(dirs, infos):
        say(f"# sweep {info.get('sweep', '?')}: {d}; commit {info.get('commit', '?')}, "
            f"{'busy (one core busy half of every second)' if info.get('busy') else 'quiet'}; make run "
            f"{info.get('make_run_s', float('nan')):.0f} s (exit {info.get('make_run_exit')}), held-back runs "
            f"{info.get('held_back_s', float('nan')):.0f} s; load average at the end {info.get('load_average_end')}")
    res = {name: [study_result(d, d / "heldback", name) for d in dirs] for name in HELD_BACK}
    ex: dict = {}
    if extrap:
        jobs, where = [], []
        for name, fits in res.items():
            for k, (d, fit) in enumerate(zip(dirs, fits)):
                grid = fitted_grid(d, name, fit["varied"], fit["processes"]) if fit else None
                if grid is not None and len(fit["at"]):
                    jobs.append((fit["varied"], grid, fit["at"]))
                    where.append((name, k))
        ex = dict(zip(where, extrap_errors(jobs))) if jobs else {}
    covered, widths, errors, spread, worst_decided, studies = [], [], [], [], [], {}
    for name, fits in res.items():
        say(f"\n## {name}")
        models, preds = [], []
        sweep_out = []
        for k, fit in enumerate(fits):
            if fit is None:
                say(f"  sweep {k + 1}: no time model")
                continue
            model, at, row = fit["model"], fit["at"], fit["row"]
            share = float(row["lead_share"]) if pd.notna(row["lead_share"]) else float("nan")
            decided = fit["measuring"].startswith("decided") or (not fit["measuring"] and share >= 0.8)
            err = np.abs(at["rel_error"].to_numpy(float))
            hit = at["covered"].to_numpy(bool)
            width = at["width"].to_numpy(float)
            say(f"  sweep {k + 1}: {model}\n           lead {model.lead()}, share {share:.2f}; measuring: "
                f"{fit['measuring'] or '(no decide)'}")
            text = (f"           held back: median error {np.median(err):.1%} (max {np.max(err):.1%}), "
                    f"{int(hit.sum())} of {len(hit)} in the {LEVEL:.0%} interval, median width {np.median(width):.0%}")
            e = ex.get((name, k))
            if e and "error" not in e:
                text += f"; Extra-P {np.median(np.abs(np.array(e['predicted']) - at['measured']) / at['measured']):.1%}: {e['text']}"
            elif e:
                text += f"; Extra-P failed: {e['error']}"
            say(text)
            say("           " + ", ".join(f"{','.join(f'{v}={r[v]:g}' for v in fit['varied'])}: {r['rel_error']:+.0%}"
                                          f"{'' if r['covered'] else ' (out)'}" for _, r in at.iterrows()))
            covered += list(hit)
            widths += list(width)
            errors.append(float(np.median(err)))
            if decided and share >= 0.8:
                worst_decided.append(float(np.max(err)))
            models.append(model)
            preds.append(at.set_index("config_id")["predicted"])
            sweep_out.append({"sweep": k + 1, "model": str(model), "lead": model.lead(), "lead_share": share,
                              "measuring": fit["measuring"], "decided": bool(decided),
                              "median_error": float(np.median(err)), "max_error": float(np.max(err)),
                              "covered": int(hit.sum()), "points": int(len(hit)), "median_width": float(np.median(width))})
        if len(preds) > 1:
            table = pd.concat(preds, axis=1).dropna()
            a = apart(table.to_numpy(float).T)
            spread += list(a[np.isfinite(a)])
            agree = all(same_lead_order(x, y) for x in models for y in models if x is not y)
            say(f"  lead orders {'agree' if agree else 'differ'}: " + " | ".join(m.lead() for m in models))
            say(f"  the sweeps' predictions (each averaged over its resamples' forms) at the {len(a)} held-back points "
                f"apart by a median of {np.nanmedian(a):.1%}, at most {np.nanmax(a):.1%}; {int(np.sum(a > 0.10))} more than 10 % apart")
            say(reproduced(dirs, name, [f for f in fits if f is not None]))
        studies[name] = sweep_out
    spread_a, cov = np.array(spread), np.array(covered, bool)
    summary = {"sweeps": infos, "studies": studies, "worst_median_error": max(errors) if errors else None,
               "apart_within_10": float(np.mean(spread_a <= 0.10)) if len(spread_a) else None,
               "apart_within_15": float(np.mean(spread_a <= 0.15)) if len(spread_a) else None,
               "coverage": float(cov.mean()) if len(cov) else None, "points": int(len(cov)),
               "median_width": float(np.median(widths)) if widths else None,
               "worst_decided_error": max(worst_decided) if worst_decided else None,
               "make_run_max_s": max((i.get("make_run_s", 0) for i in infos), default=None)}
    say("\n## targets")
    ok = lambda b: "yes" if b else "NO"  # noqa: E731
    say(f"  make run at most 5 minutes: {ok(summary['make_run_max_s'] <= 300)} (longest {summary['make_run_max_s']:.0f} s)")
    say(f"  90 % intervals covered {summary['coverage']:.0%} of {summary['points']} held-back points, median width "
        f"{summary['median_width']:.0%} of the prediction")
    if not busy:
        say(f"  worst study-sweep median error {summary['worst_median_error']:.1%} (<= 15 %): "
            f"{ok(summary['worst_median_error'] <= 0.15)}")
        if summary["apart_within_10"] is not None:
            say(f"  the sweeps' predictions within 10 % of each other at {summary['apart_within_10']:.0%} of {len(spread_a)} "
                f"points (>= 90 %): {ok(summary['apart_within_10'] >= 0.9)}; within 15 % at "
                f"{summary['apart_within_15']:.0%} (all): {ok(summary['apart_within_15'] == 1.0)}")
        say(f"  coverage 80-97 %: {ok(0.8 <= summary['coverage'] <= 0.97)}")
    else:
        for name, out in studies.items():
            p1 = "p" not in config["studies"][name].get("vary", {})
            for s in out:
                within = s["median_error"] <= 0.15
                if p1:
                    verdict = ok(s["decided"] and within)
                    say(f"  {name} sweep {s['sweep']} (p = 1): decided within the quiet bounds: {verdict} "
                        f"({s['measuring'] or 'share ' + format(s['lead_share'], '.2f')}; median error {s['median_error']:.1%})")
                else:
                    good = (s["decided"] and within) or (not s["decided"] and s["measuring"].startswith(UNDECIDED))
                    say(f"  {name} sweep {s['sweep']}: decided within the bounds or budget spent (or lack of fit) "
                        f"undecided: {ok(good)} "
                        f"({s['measuring'] or 'no decide'}; median error {s['median_error']:.1%})")
        # issue "Say where no smooth form fits": every study ends one of these three ways
        ends = Counter("decided" if s["decided"] else next((u for u in UNDECIDED if s["measuring"].startswith(u)),
                                                            s["measuring"] or "(no decide)")
                       for out in studies.values() for s in out)
        say(f"  every study ends decided, 'lack of fit' or 'budget spent': {ok(set(ends) <= {'decided', *UNDECIDED})} "
            f"({', '.join(f'{k} {v}' for k, v in sorted(ends.items()))} study-sweeps)")
        summary["ended"] = dict(ends)
        wd = summary["worst_decided_error"]
        say(f"  no decided form (lead share >= 0.8) misses a held-back point by more than 30 %: "
            f"{ok(wd is None or wd <= 0.30)} (largest such miss {'none' if wd is None else format(wd, '.1%')})")
        say(f"  coverage >= 80 %: {ok(summary['coverage'] >= 0.8)}")
        if against:
            say(f"  median width at most 2x the quiet sweeps' ({against['median_width']:.0%}): "
                f"{ok(summary['median_width'] <= 2 * against['median_width'])}")
    return lines, summary


# how measuring until decided says it ended undecided with a reason (perfsweep.sweep.plan.measuring_ended)
UNDECIDED = ("budget spent", "lack of fit")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh make runs to make")
    ap.add_argument("--busy", action="store_true", help="a load keeps one core busy half of every second during make run")
    ap.add_argument("--out", help="keep the evidence and the output here")
    ap.add_argument("--from", dest="source", help="judge the sweeps kept in this directory (an --out of before)")
    ap.add_argument("--against", help="the quiet sweeps' --out: the busy intervals' width is judged against theirs")
    ap.add_argument("--extrap", action="store_true", help="Extra-P beside (its venv takes 1-2 minutes to make)")
    args = ap.parse_args()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    t0 = time.perf_counter()
    if args.source:
        src = Path(args.source)
        dirs = sorted(p for p in src.glob("sweep*") if p.is_dir())
        busy = any(json.loads((d / "sweep.json").read_text()).get("busy") for d in dirs)
    else:
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="perfsweep-replicates-"))
        busy, dirs = args.busy, []
        print(f"# {args.runs} {'busy' if busy else 'quiet'} make runs of {REPO} HEAD, {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        for k in range(1, args.runs + 1):
            clone, info = make_sweep(k, busy, config)
            keep(clone, out / f"sweep{k}", info)
            shutil.rmtree(clone.parent, ignore_errors=True)
            dirs.append(out / f"sweep{k}")
        src = out
    against = json.loads((Path(args.against) / "summary.json").read_text()) if args.against else None
    lines, summary = judge(dirs, config, args.extrap, against, busy)
    lines.append(f"# {time.perf_counter() - t0:.0f} s in all")
    text = "\n".join(lines)
    print(text)
    if not args.source:
        (src / "output.txt").write_text(text + "\n")
        (src / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
