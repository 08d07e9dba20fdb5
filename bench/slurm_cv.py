"""Timing noise on the local cluster against a local run of the same sweep: the worst coefficient of
variation over the configurations (seed 001, Table 1), in the same run.

    .venv/bin/python bench/slurm_cv.py [--k 5] [--steps 40]

Needs the local cluster (as root: .venv/bin/python -m perfsweep.cluster.local_slurm start). Runs one
ljmd sweep (n x p, p up to the cluster's CPUs) twice from scratch: locally (`--cores` = all cores) and
through workflow/profiles/local-slurm, where each run gets whole nodes (`cluster: exclusive`, the
default) that declare only the cores they have. Prints both worst CVs and their ratio (target: the
cluster's worst CV within 1.5x of the local one).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def sweep(k: int, steps: int, extra: list[str]) -> pd.DataFrame:
    with tempfile.TemporaryDirectory(prefix="perfsweep-cv-", dir="/tmp") as tmp:
        cfg = {"app": {"name": "ljmd", "args": {"steps": steps}},
               "parameters": {"n": 1000, "m": 2, "d": 0.5, "c": 2.0, "p": 1}, "repetitions": k,
               "studies": {"np": {"vary": {"n": [500, 1000, 2000], "p": [1, 2]}}},
               "results": str(Path(tmp) / "results")}
        (Path(tmp) / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        target = str(Path(tmp) / "results" / "tables" / "np" / "variability.csv")
        cmd = [SNAKEMAKE, target, "--snakefile", str(REPO / "Snakefile"), *extra, "--configfile", "c.yaml"]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        return pd.read_csv(target)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    local = sweep(args.k, args.steps, ["--cores", str(os.cpu_count() or 1)])
    cluster = sweep(args.k, args.steps, ["--profile", str(REPO / "workflow" / "profiles" / "local-slurm")])
    worst_local, worst_cluster = local["cv"].max(), cluster["cv"].max()
    print(f"{len(local)} configurations x {args.k} repetitions of ljmd (steps {args.steps})")
    print(f"worst CV local        : {worst_local:6.1%}  (median {local['cv'].median():.1%})")
    print(f"worst CV local cluster: {worst_cluster:6.1%}  (median {cluster['cv'].median():.1%})")
    print(f"ratio cluster / local : {worst_cluster / worst_local:.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
