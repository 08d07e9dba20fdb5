"""Planning at cluster scale: seed 001's full grid (6 values of each of n, m, d, c, p; k = 10: 77,760
runs) planned by perfsweep against a flat one-job-per-run Snakefile, in the same run.

    .venv/bin/python bench/planning_scale.py [--values 6] [--k 10]

Prints, for each, the wall time and peak memory of `snakemake -n` (a dry run plans the whole DAG and
stops before running anything), the number of jobs, and perfsweep's ratios; then the time one SLURM job
spends in Snakemake before its run starts: the job's own Snakemake re-parses the workflow (config,
grid) and builds the DAG of its one target job.

perfsweep plans with `bundle: repetitions`: one job per configuration runs its k repetitions one after
the other (one allocation) and declares one output, a manifest of its k records, so the DAG has k times
fewer jobs and files; the records are the same files, one per run. The flat baseline is the obvious Snakefile: one rule, one job per (n, m, d, c, p, rep), `touch`.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))

FLAT = '''
import itertools
V = config["values"]
K = config["k"]
OUT = [f"runs/n={n}_m={m}_d={d}_c={c}_p={p}/rep{r}.json"
       for n, m, d, c, p in itertools.product(V["n"], V["m"], V["d"], V["c"], V["p"]) for r in range(K)]

rule all:
    input: OUT

rule run:
    output: "runs/n={n}_m={m}_d={d}_c={c}_p={p}/rep{rep}.json"
    threads: lambda wildcards: int(wildcards.p)
    shell: "touch {output}"
'''


def grid(values: int) -> dict[str, list]:
    return {"n": [4000 * 2**i for i in range(values)], "m": list(range(1, values + 1)),
            "d": [round(0.3 + 0.1 * i, 2) for i in range(values)], "c": [round(2.0 + 0.25 * i, 2) for i in range(values)],
            "p": [2**i for i in range(values)]}


def measure(cmd: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one command, run from a fresh
    interpreter so that the peak is this command's alone. On a shared machine CPU time is the steadier
    figure; both are printed."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); w = time.perf_counter() - t; "
             "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(f'{w} {u.ru_utime + u.ru_stime} {u.ru_maxrss / 1024}'); "
             "sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:]); sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", probe, *cmd], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    wall, cpu, rss = proc.stdout.split()
    return float(wall), float(cpu), float(rss), proc.stderr


def jobs_of(dryrun_output: str) -> int:
    for line in dryrun_output.splitlines():
        if line.strip().startswith("total"):
            return int(line.split()[-1])
    return -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--values", type=int, default=6, help="values per parameter (6: seed 001's full grid)")
    ap.add_argument("--k", type=int, default=10, help="repetitions")
    args = ap.parse_args()
    values = grid(args.values)
    runs = args.values**5 * args.k
    with tempfile.TemporaryDirectory(prefix="perfsweep-plan-", dir="/tmp") as tmp:
        tmp = Path(tmp)
        (tmp / "flat").mkdir()
        (tmp / "flat" / "Snakefile").write_text(FLAT)
        (tmp / "flat" / "c.yaml").write_text(yaml.safe_dump({"values": values, "k": args.k}))
        cfg = {"app": {"name": "ljmd", "args": {"steps": 20}},
               "parameters": {"n": 4000, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
               "studies": {"full": {"vary": values}}, "repetitions": args.k, "bundle": "repetitions",
               "results": str(tmp / "ps" / "results")}
        (tmp / "ps").mkdir()
        (tmp / "ps" / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        target = str(tmp / "ps" / "results" / "tables" / "full" / "medians.csv")
        print(f"planning {runs:,} runs (snakemake -n; {args.values} values of n, m, d, c, p; k = {args.k})")
        flat_t, flat_c, flat_m, flat_out = measure([SNAKEMAKE, "-n", "--cores", "2", "--configfile", "c.yaml"],
                                                   tmp / "flat")
        print(f"flat one job per run : {flat_t:7.1f} s wall  {flat_c:7.1f} s CPU  {flat_m:6.0f} MiB  "
              f"{jobs_of(flat_out):>7,} jobs")
        ps_cmd = [SNAKEMAKE, target, "-n", "--cores", "2", "--snakefile", str(REPO / "Snakefile"),
                  "--configfile", "c.yaml"]
        ps_t, ps_c, ps_m, ps_out = measure(ps_cmd, tmp / "ps")
        print(f"perfsweep (bundled)  : {ps_t:7.1f} s wall  {ps_c:7.1f} s CPU  {ps_m:6.0f} MiB  "
              f"{jobs_of(ps_out):>7,} jobs")
        print(f"ratio flat / perfsweep: wall time {flat_t / ps_t:.2f}x, CPU time {flat_c / ps_c:.2f}x, "
              f"memory {flat_m / ps_m:.2f}x (target: time >= 3x)")
        # what one SLURM job pays before its run starts: the plugin's job step runs Snakemake on the
        # job's one target (--target-jobs), which re-parses the workflow and plans that job alone
        config_id = "n=4000_m=1_d=0.3_c=2_p=1"
        job_cmd = [SNAKEMAKE, "-n", "--snakefile", str(REPO / "Snakefile"), "--configfile", "c.yaml",
                   "--target-jobs", f"run_full:config={config_id}", "--allowed-rules", "run_full", "--cores", "1",
                   "--force"]
        job_t, job_c, job_m, _ = measure(job_cmd, tmp / "ps")
        print(f"one SLURM job's Snakemake (parse + plan its target): {job_t:.1f} s wall, {job_c:.1f} s CPU, "
              f"{job_m:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
