"""Many short runs on SLURM: one allocation per run against bundles of runs per allocation.

    .venv/bin/python bench/slurm_bundling.py [--runs-per-bundle 16] [--cores 2]

Needs the local cluster (as root: .venv/bin/python -m perfsweep.cluster.local_slurm start). Runs the
same small ljmd sweep (2 studies, 12 configurations x k repetitions of short runs) from scratch through
workflow/profiles/local-slurm three ways: per run (one sbatch each); bundled by perfsweep
(`bundle: repetitions`: the k repetitions of a configuration run in one process in one allocation);
and with Snakemake's job groups (--groups run=bundle --group-components bundle=N --cores C), which
start a Snakemake process per grouped job inside the allocation. Prints the wall times, the ratios
and how many SLURM jobs each used.
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
CONFIG = {
    "app": {"name": "ljmd", "args": {"steps": 4}},
    "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
    "repetitions": 8,
    "studies": {"n": {"vary": {"n": [100, 150, 200, 250, 300, 350]}},
                "m": {"vary": {"m": [1, 2, 3, 4, 5, 6]}}},
}


def sweep(extra: list[str]) -> tuple[float, int, int]:
    with tempfile.TemporaryDirectory(prefix="perfsweep-bundle-", dir="/tmp") as tmp:
        cfg = dict(CONFIG, results=str(Path(tmp) / "results"))
        (Path(tmp) / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        targets = [str(Path(tmp) / "results" / "tables" / s / "medians.csv") for s in CONFIG["studies"]]
        cmd = [str(Path(sys.executable).with_name("snakemake")), *targets, "--snakefile", str(REPO / "Snakefile"),
               "--profile", str(REPO / "workflow" / "profiles" / "local-slurm"), *extra,
               "--configfile", str(Path(tmp) / "c.yaml")]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        wall = time.perf_counter() - t0
        recs = [json.loads(p.read_text()) for p in (Path(tmp) / "results" / "runs").rglob("*.json")]
        return wall, len(recs), len({r["slurm"]["job_id"] for r in recs})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", action="store_true", help="also measure Snakemake's job groups")
    ap.add_argument("--runs-per-bundle", type=int, default=48)
    ap.add_argument("--cores", type=int, default=4, help="cores per bundled allocation")
    args = ap.parse_args()
    per_run, n1, jobs1 = sweep([])
    bundled, n2, jobs2 = sweep(["--config", "bundle=repetitions"])
    print(f"per run            : {per_run:7.1f} s for {n1} runs in {jobs1} SLURM jobs")
    print(f"bundle: repetitions: {bundled:7.1f} s for {n2} runs in {jobs2} SLURM jobs "
          f"({per_run / bundled:.2f}x faster than per run)")
    if args.groups:
        grouped, n3, jobs3 = sweep(["--groups", "run=bundle", "--group-components",
                                    f"bundle={args.runs_per_bundle}", "--cores", str(args.cores)])
        print(f"snakemake groups   : {grouped:7.1f} s for {n3} runs in {jobs3} SLURM jobs "
              f"({per_run / grouped:.2f}x; {args.runs_per_bundle} runs per allocation of {args.cores} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
