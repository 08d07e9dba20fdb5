"""Power and false alarms of ``perfsweep compare`` on this host: paired measurement against stored baselines.

    .venv/bin/python bench/compare_power.py                                  # 10 paired trials + 13 sweeps
    .venv/bin/python bench/compare_power.py --trials 2 --sweeps 5 --keep /tmp/cp   # a quick look
    .venv/bin/python bench/compare_power.py --reuse /tmp/cp                  # judge sweeps kept before again

The study is tests/test_compare_sweeps.py's tiny one (ljmd T(n), 5 sizes x 5 repetitions of 150 steps).
The changes: the whole program 10 % and 20 % slower (steps: 165, 180: every step more work) and one
region 20 % slower (slow-region: forces=1.2). All at compare's defaults (threshold 5 %, alpha 0.05).

- **Paired** (config key ``variants:``): each trial is one sweep measuring the variants base, copy1,
  copy2 (base again), whole10, whole20 and region20 together, each configuration's variants back to
  back in every round (seed = the trial's number). Judged: the 3 replicate pairs (base/copy1,
  base/copy2, copy1/copy2) and each change against base.
- **Stored baselines**: ``--sweeps`` ordinary sweeps one after another, base and changes in the order
  ``SEQUENCE``; each sweep after the third is judged against the last 3 base sweeps before it (a rolling
  window, ``perfsweep compare B1 B2 B3 NEW``) and, as the default single-baseline gate, against the last
  base sweep alone.

A replicate comparison that exits 1 is a false alarm; a change is caught when compare exits 1 (for the
region, with the force region's row a regression). Printed per case: false alarms or detections, the
share of the replicates' gating rows called "no significant change", and the median minimum detectable
effect of the row that carries the change (all/time; for the region step/forces/time), with the
detection rate among the comparisons whose mde is below the injected change. The sweeps' aggregates,
every comparison's rows (``comparisons.json``) and this output go to ``--out`` (by default
bench/results/compare_power/<commit>-quiet, bench/results/README.md's naming: on a host other work loads, give
``--out bench/results/compare_power/<commit>-busy``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import yaml

REPO = Path(__file__).resolve().parents[1]
PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))
sys.path.insert(0, str(REPO / "tests"))

from perfsweep.compare.judge import compare  # noqa: E402
from perfsweep.compare.load import load_paired, load_side  # noqa: E402

CHANGES = {"whole10": {"steps": 165}, "whole20": {"steps": 180}, "region20": {"slow-region": "forces=1.2"}}
INJECTED = {"whole10": 0.10, "whole20": 0.20, "region20": 0.20}
ROW = {"whole10": ("all", "time"), "whole20": ("all", "time"), "region20": ("step/forces", "time"),
       "replicate": ("all", "time")}
REPLICATES = [("base", "copy1"), ("base", "copy2"), ("copy1", "copy2")]
SEQUENCE = ["base", "base", "base", "whole10", "base", "whole20", "base", "region20", "base", "whole10", "base",
            "whole20", "base"]


def tiny() -> dict:
    from test_compare_sweeps import TINY

    return json.loads(json.dumps(TINY))


def sweep(work: Path, cfg: dict) -> Path:
    """Run one sweep of ``cfg`` in ``work`` (kept if it is there and complete); its results directory."""
    results = work / "results"
    if (results / "models").is_dir() and any((results / "models").glob("*/models.json")):
        return results
    work.mkdir(parents=True, exist_ok=True)
    cfg["results"] = str(results)
    (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    start = time.perf_counter()
    with open(work / "log", "w") as log:
        rc = subprocess.run([PERFSWEEP, "run", "c.yaml", "--cores", str(os.cpu_count() or 1), "--no-report"],
                            cwd=work, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"{work}: sweep failed (exit {rc}): see {work / 'log'}")
    print(f"  {work.name}: {time.perf_counter() - start:.0f} s ({time.strftime('%H:%M:%S')})", flush=True)
    return results


def judged(result, case: str, label: str, mode: str) -> dict:
    """What one comparison says: its exit code, the gating rows' verdicts, the change's row."""
    rows = {(r.region, r.metric): r for r in result.rows}
    row = rows[ROW[case]]
    gating = [r for r in result.rows if r.gated]
    code = result.exit_code()
    caught = code == 1 and (case != "region20" or row.verdict == "regression")
    return {"mode": mode, "case": case, "label": label, "exit": code, "caught": caught,
            "ratio": row.ratio, "low": row.low, "high": row.high, "mde": row.mde, "verdict": row.verdict,
            "gating": {f"{r.region}/{r.metric}": r.verdict for r in gating},
            "alarms": [f"{r.region}/{r.metric}" for r in gating if r.gates()]}


def paired_trials(root: Path, trials: int) -> list[dict]:
    out = []
    print(f"paired: {trials} trials, each one sweep of the variants base, copy1, copy2, {', '.join(CHANGES)}")
    for t in range(trials):
        cfg = tiny()
        cfg["seed"] = t + 1
        cfg["variants"] = {"base": {}, "copy1": {}, "copy2": {}, **{k: {"args": v} for k, v in CHANGES.items()}}
        results = sweep(root / f"paired{t}", cfg)
        for a, b in REPLICATES:
            out.append(judged(compare(*load_paired(results, [a, b])), "replicate", f"trial {t}: {a}/{b}", "paired"))
        for case in CHANGES:
            out.append(judged(compare(*load_paired(results, ["base", case])), case, f"trial {t}: base/{case}", "paired"))
    return out


def stored_baselines(root: Path, count: int) -> list[dict]:
    sequence = (SEQUENCE * (count // len(SEQUENCE) + 1))[:count]
    print(f"stored baselines: {count} sweeps one after another: {' '.join(sequence)}")
    done: list[tuple[str, Path]] = []
    for k, case in enumerate(sequence):
        cfg = tiny()
        cfg["app"]["args"].update(CHANGES.get(case, {}))
        done.append((case, sweep(root / f"sweep{k:02d}-{case}", cfg)))
    out = []
    for k, (case, results) in enumerate(done):
        bases = [r for c, r in done[:k] if c == "base"]
        kind = "replicate" if case == "base" else case
        if bases:
            out.append(judged(compare(load_side(bases[-1]), load_side(results)), kind,
                              f"sweep {k} ({case}) vs sweep {done.index(('base', bases[-1]))}", "one baseline"))
        if len(bases) >= 3:
            window = [load_side(b) for b in bases[-3:]]
            out.append(judged(compare(window[-1], load_side(results), history=window[:-1]), kind,
                              f"sweep {k} ({case}) vs the 3 base sweeps before it", "3 baselines"))
    return out


def summary(records: list[dict]) -> list[str]:
    lines = []
    for mode in ("paired", "3 baselines", "one baseline"):
        mine = [r for r in records if r["mode"] == mode]
        if not mine:
            continue
        reps = [r for r in mine if r["case"] == "replicate"]
        if reps:
            gating = [v for r in reps for v in r["gating"].values()]
            quiet = sum(v == "no significant change" for v in gating)
            lines.append(f"{mode}: replicates: {sum(r['exit'] == 1 for r in reps)} false alarms of {len(reps)}; "
                         f"{quiet} of {len(gating)} gating rows 'no significant change' ({quiet / max(len(gating), 1):.0%}); "
                         f"median mde of all/time {median(r['mde'] for r in reps):.1%}")
        for case, size in INJECTED.items():
            cases = [r for r in mine if r["case"] == case]
            if not cases:
                continue
            below = [r for r in cases if r["mde"] < size]
            lines.append(f"{mode}: {case} (+{size:.0%}): caught in {sum(r['caught'] for r in cases)} of {len(cases)}; "
                         f"median ratio {median(r['ratio'] for r in cases):.3f}, median mde {median(r['mde'] for r in cases):.1%}; "
                         f"where the mde < {size:.0%}: caught in {sum(r['caught'] for r in below)} of {len(below)}")
    return lines


def keep(out: Path, root: Path, records: list[dict], lines: list[str]) -> None:
    """The aggregates of every sweep, every comparison and the summary, for the repository."""
    out.mkdir(parents=True, exist_ok=True)  # the default, <commit>-quiet, is new for each commit
    for agg in sorted(root.glob("*/results/tables/*/aggregate.csv")):  # gzipped: pandas.read_csv reads them so
        target = out / "aggregates" / agg.parents[3].name / agg.parent.name / (agg.name + ".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(agg, "rb") as src, gzip.GzipFile(target, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    (out / "comparisons.json").write_text(json.dumps(records, indent=1, default=float) + "\n")
    (out / "summary.txt").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10, help="paired sessions (default %(default)s)")
    ap.add_argument("--sweeps", type=int, default=len(SEQUENCE), help="ordinary sweeps in a row (default %(default)s)")
    ap.add_argument("--keep", metavar="DIR", help="run the sweeps here and keep them (default: a temporary directory)")
    ap.add_argument("--reuse", metavar="DIR", help="judge the sweeps kept in DIR (complete ones are not run again)")
    ap.add_argument("--out", help="where the aggregates, comparisons.json and summary.txt go (default "
                    "bench/results/compare_power/<commit>-quiet)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    if args.out is None:
        args.out = str(REPO / "bench" / "results" / "compare_power" / f"{commit or 'unknown'}-quiet")
    print(f"compare_power at commit {commit or 'unknown'}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="compare-power-") as tmp:
        root = Path(args.reuse or args.keep or tmp)
        records = paired_trials(root, args.trials) + stored_baselines(root, args.sweeps)
        for r in records:
            if r["case"] == "replicate" and r["exit"] == 1 or r["case"] != "replicate" and not r["caught"]:
                print(f"  {r['mode']}: {r['label']}: exit {r['exit']}, {'/'.join(ROW[r['case']])} {r['ratio']:.3f} "
                      f"[{r['low']:.3f}, {r['high']:.3f}] mde {r['mde']:.1%} {r['verdict']}"
                      + (f"; alarms: {', '.join(r['alarms'])}" if r["alarms"] else ""))
        lines = summary(records)
        lines.append(f"wall time {time.perf_counter() - start:.0f} s, load average at the end {os.getloadavg()[0]:.1f}")
        print("\n".join(lines))
        keep(Path(args.out), root, records, [f"commit {commit}"] + lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
