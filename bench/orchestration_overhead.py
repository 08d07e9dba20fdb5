"""Orchestration overhead of a sweep: total wall time / sum of the run records' wall times.

    .venv/bin/python bench/orchestration_overhead.py [--config config/config.yaml] [--cores 2]

Runs the whole workflow on the config into a fresh temporary results directory (so every run is
executed), then prints the wall time of the Snakemake invocation, the sum of the records' wall times
(launch to exit of each mpiexec, measured by the runner) and their ratio (goal: <= 1.10). With
several cores the runs overlap, so the ratio can fall below 1.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfsweep-bench-") as tmp:
        cfg = yaml.safe_load(Path(args.config).read_text())
        cfg["results"] = str(Path(tmp) / "results")
        cfgfile = Path(tmp) / "config.yaml"
        cfgfile.write_text(yaml.safe_dump(cfg, sort_keys=False))
        cmd = [str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
               "--configfile", str(cfgfile), "--cores", str(args.cores), "-q"]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        total = time.perf_counter() - t0
        records = [json.loads(p.read_text()) for p in (Path(tmp) / "results" / "runs").rglob("*.json")]
    run_sum = sum(r["wall_time"] for r in records)
    app_sum = sum(r["time"] or 0 for r in records)
    print(f"config                 {args.config}")
    print(f"runs                   {len(records)} ({sum(r['status'] != 'ok' for r in records)} failed)")
    print(f"total wall time        {total:8.1f} s   (snakemake, whole workflow, --cores {args.cores})")
    print(f"sum of run wall times  {run_sum:8.1f} s   (launch to exit, from the records)")
    print(f"sum of app times       {app_sum:8.1f} s   (the apps' own measured time)")
    print(f"overhead ratio         {total / run_sum:8.3f}     (total / sum of run wall times; goal <= 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
