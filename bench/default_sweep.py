"""Where the default sweep's time goes: runs it (or reads an earlier results directory) and prints the
share of launch wall time that is the applications' own measured time, the CV distribution and the
sweep's total time (issue 17: less launch per measurement).

    .venv/bin/python bench/default_sweep.py                       # run config/config.yaml in a temp dir
    .venv/bin/python bench/default_sweep.py --results results     # figures of an earlier sweep only

Targets (on an idle 2-core machine): app time >= 50 % of the launch wall time, worst CV < 10 % for >= 90 %
of the configurations, `make run` within 5 minutes including set-up. Timings on a shared machine are
pessimistic (other processes lengthen launches and widen the CVs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def figures(results: Path) -> dict:
    rows = []
    for path in (results / "runs").rglob("rep*.json"):
        rec = json.loads(path.read_text())
        rows.append({"study": rec["study"], "config_id": rec["config_id"], "status": rec["status"],
                     "time": rec.get("time"), "wall": rec.get("wall_time"),
                     "warmup": (rec.get("warmup") or {}).get("time", 0.0)})
    runs = pd.DataFrame(rows)
    ok = runs[runs["status"] == "ok"]
    per_study = ok.groupby("study").agg(runs=("time", "size"), app=("time", "sum"), wall=("wall", "sum"))
    per_study["app_share"] = per_study["app"] / per_study["wall"]
    cv = ok.groupby(["study", "config_id"])["time"].agg(lambda t: t.std(ddof=1) / t.mean() if len(t) > 1 else float("nan"))
    reps = runs.groupby(["study", "config_id"]).size()
    return {
        "runs": len(runs), "failed": int((runs["status"] != "ok").sum()),
        "app_s": float(ok["time"].sum()), "wall_s": float(ok["wall"].sum()), "warmup_s": float(ok["warmup"].sum()),
        "app_share": float(ok["time"].sum() / ok["wall"].sum()),
        "launches_at_least_half_app": float((ok["time"] >= 0.5 * ok["wall"]).mean()),
        "configurations": int(len(cv)), "cv_below_10pct": float((cv < 0.10).mean()),
        "cv_median": float(cv.median()), "cv_p90": float(cv.quantile(0.9)), "cv_max": float(cv.max()),
        "repetitions": {int(k): int(v) for k, v in reps.value_counts().sort_index().items()},
        "per_study": per_study.round(3).to_dict(orient="index"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", help="an existing results directory (no sweep is run)")
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--cores", default="2")
    args = ap.parse_args()
    if args.results:
        out = figures(Path(args.results))
    else:
        work = Path(tempfile.mkdtemp(prefix="perfsweep-default-"))
        t0 = time.perf_counter()
        rc = subprocess.call([str(Path(sys.executable).with_name("perfsweep")), "run", args.config, "--cores",
                              args.cores], cwd=work, stdout=subprocess.DEVNULL)
        total = time.perf_counter() - t0
        out = figures(work / "results")
        out.update(sweep_s=round(total, 1), exit_code=rc, workdir=str(work), load=os.getloadavg()[0])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
