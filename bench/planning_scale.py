"""Planning at cluster scale: seed 001's full grid (6 values of each of n, m, d, c, p; k = 10: 77,760
runs) planned by perfsweep against a flat one-job-per-run Snakefile, in the same run; then a 100,000-run
sweep with ``bundle: packs`` (target: planned in at most 60 s and 2 GiB).

    .venv/bin/python bench/planning_scale.py [--values 6] [--k 10] [--packs-k 10] [--pack-runs 500]
                                             [--profile missed|always|never] [--out DIR]

Prints, for each, the wall time and peak memory of `snakemake -n` (a dry run plans the whole DAG and
stops before running anything), the number of jobs, and perfsweep's ratios; then the time one SLURM job
spends in Snakemake before its run starts: the job's own Snakemake re-parses the workflow (config,
grid) and builds the DAG of its one target job.

perfsweep plans with `bundle: repetitions`: one job per configuration runs its k repetitions one after
the other (one allocation) and declares one output, a manifest of its k records, so the DAG has k times
fewer jobs and files; the records are the same files, one per run. The flat baseline is the obvious Snakefile: one rule, one job per (n, m, d, c, p, rep), `touch`.

The packs case (`bundle: packs`, perfsweep.sweep.packs): a grid of 10 x 10 x 5 x 4 x 5 values of n, m, d, c,
p (10,000 configurations; p = 1..16) x ``--packs-k`` repetitions (10: 100,000 runs, config.MAX_RUNS),
``pack: {runs: --pack-runs, seconds_per_run: 1}``: a pack holds runs of one round and one p, so 10 rounds x
5 values of p x 2,000 / 500 = 200 packs. Measured the same way: the dry run of the whole workflow (target
`all`: packs, tables, models, figures, report pages; PASS/FAIL against 60 s and 2 GiB) and, like for like
with the bundled case, of the study's medians.csv; a main start's parse that writes the pack plan and every
pack's file (`snakemake --list-rules`: the workflow writes them at parse time, then lists its rules and
ends); then one pack job's own Snakemake (`--target-jobs run_pack:pack=<the first pack>`, with and without
`--mode remote`, which the SLURM plugin's job passes) on the plan that main start wrote. A target missed
(or ``--profile always``): the whole-workflow dry run once more under cProfile, its top entries printed,
the profile in ``<out>/profile-packs.txt``.

Peak memory is ru_maxrss of RUSAGE_CHILDREN in a fresh interpreter that runs only the command: the peak of
its largest process (a dry run is one Snakemake process). The output (this stdout) also goes to
``<out>/output.txt`` (default bench/results/planning_scale/<commit>-<quiet|busy>/, busy where the load
average is 1 or more at the start).
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from tee import Tee  # bench/tee.py

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TARGETS = {"seconds": 60.0, "gib": 2.0}  # the packs case: planning 100,000 runs

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


def packs_grid() -> dict[str, list]:
    """10,000 configurations: 10 x 10 x 5 x 4 x 5 values of n, m, d, c, p."""
    return {"n": [4000 * 2**i for i in range(10)], "m": list(range(1, 11)),
            "d": [round(0.3 + 0.1 * i, 2) for i in range(5)], "c": [round(2.0 + 0.25 * i, 2) for i in range(4)],
            "p": [2**i for i in range(5)]}


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


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def profile(cmd: list[str], cwd: Path, out: Path, lines: int = 25) -> None:
    """``cmd`` (a Snakemake command line) once more under cProfile; its top entries printed, all of them in
    ``out``."""
    prof = out.with_suffix(".prof")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), *cmd], cwd=cwd, capture_output=True,
                          text=True)
    took = time.perf_counter() - t
    if not prof.exists():
        print(f"  profile: failed (exit {proc.returncode}): {proc.stderr[-500:]}")
        return
    stats = pstats.Stats(str(prof))
    buf = io.StringIO()
    stats.stream = buf
    stats.sort_stats("cumulative").print_stats(80)
    stats.sort_stats("tottime").print_stats(40)
    out.write_text(buf.getvalue().replace(str(REPO) + "/", "").replace(sys.prefix + "/", ""))
    prof.unlink()
    buf = io.StringIO()
    stats.stream = buf
    stats.sort_stats("tottime").print_stats(lines)
    body = buf.getvalue().partition("   ncalls")[2]
    print(f"  under cProfile {took:.1f} s wall; by own time (all of it: {out.relative_to(REPO) if out.is_relative_to(REPO) else out}):")
    print("       ncalls  tottime  percall  cumtime  percall filename:lineno(function)")
    for line in body.splitlines()[1:]:
        if line.strip():
            print("    " + line.replace(str(REPO) + "/", "").replace(sys.prefix + "/", ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--values", type=int, default=6, help="values per parameter (6: seed 001's full grid)")
    ap.add_argument("--k", type=int, default=10, help="repetitions")
    ap.add_argument("--packs-k", type=int, default=10, help="repetitions of the packs case's 10,000 configurations")
    ap.add_argument("--pack-runs", type=int, default=500, help="the packs case's pack: runs (at most this many a pack)")
    ap.add_argument("--profile", choices=["missed", "always", "never"], default="missed",
                    help="profile the packs case's dry run when a target is missed (default), always or never")
    ap.add_argument("--out", type=Path, default=None,
                    help="where output.txt goes (default bench/results/planning_scale/<commit>-<quiet|busy>)")
    args = ap.parse_args()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    busy = os.getloadavg()[0] >= 1.0
    out = (args.out or REPO / "bench" / "results" / "planning_scale" / f"{commit}-{'busy' if busy else 'quiet'}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "output.txt", "w")
    sys.stdout = Tee(sys.__stdout__, log)
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "workflow", "Snakefile")
    began = time.perf_counter()
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}: bench/planning_scale.py --values {args.values} --k {args.k} "
          f"--packs-k {args.packs_k} --pack-runs {args.pack_runs}; commit {commit}"
          f"{' with uncommitted changes in ' + ', '.join(l.split()[-1] for l in dirty.splitlines()) if dirty else ''}; "
          f"{os.cpu_count()} cores, load average "
          f"{load()} at the start", flush=True)
    try:
        return run(args, out)
    finally:
        print(f"# load average {load()} at the end; whole run {time.perf_counter() - began:.0f} s", flush=True)
        sys.stdout = sys.__stdout__
        log.close()


def run(args: argparse.Namespace, out: Path) -> int:
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
              f"{jobs_of(flat_out):>7,} jobs", flush=True)
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
              f"{job_m:.0f} MiB", flush=True)

        # --- the packs case: 10,000 configurations x k, bundle: packs
        pvalues = packs_grid()
        configs = 1
        for v in pvalues.values():
            configs *= len(v)
        pruns = configs * args.packs_k
        pk = tmp / "packs"
        pk.mkdir()
        pcfg = {"app": {"name": "ljmd", "args": {"steps": 20}},
                "parameters": {"n": 4000, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
                "studies": {"full": {"vary": pvalues}}, "repetitions": args.packs_k, "bundle": "packs",
                "pack": {"runs": args.pack_runs, "minutes": 30, "seconds_per_run": 1},
                "results": str(pk / "results")}
        (pk / "c.yaml").write_text(yaml.safe_dump(pcfg, sort_keys=False))
        base = ["--snakefile", str(REPO / "Snakefile"), "--configfile", "c.yaml"]
        print(f"\npacks: planning {pruns:,} runs (10 x 10 x 5 x 4 x 5 values of n, m, d, c, p: {configs:,} "
              f"configurations; k = {args.packs_k}; bundle: packs, pack: runs {args.pack_runs})")
        all_cmd = [SNAKEMAKE, "-n", "--cores", "2", *base]
        pa_t, pa_c, pa_m, pa_out = measure(all_cmd, pk)
        pa_jobs = jobs_of(pa_out)
        packs_n = next((int(line.split()[-1]) for line in pa_out.splitlines() if line.startswith("run_pack ")), -1)
        print(f"perfsweep (packs), whole workflow (all): {pa_t:7.1f} s wall  {pa_c:7.1f} s CPU  {pa_m:6.0f} MiB  "
              f"{pa_jobs:>5,} jobs ({packs_n} packs)", flush=True)
        pm_t, pm_c, pm_m, pm_out = measure([SNAKEMAKE, str(pk / "results" / "tables" / "full" / "medians.csv"), "-n",
                                            "--cores", "2", *base], pk)
        print(f"perfsweep (packs), up to medians.csv   : {pm_t:7.1f} s wall  {pm_c:7.1f} s CPU  {pm_m:6.0f} MiB  "
              f"{jobs_of(pm_out):>5,} jobs")
        per = lambda x, n: x / n * 1e5  # per 100,000 runs
        print(f"per 100,000 runs, up to medians.csv: packs {per(pm_t, pruns):.1f} s wall, {per(pm_c, pruns):.1f} s CPU; "
              f"bundled {per(ps_t, runs):.1f} s, {per(ps_c, runs):.1f} s; flat {per(flat_t, runs):.1f} s, "
              f"{per(flat_c, runs):.1f} s")
        print(f"ratio bundled / packs (per run): wall time {per(ps_t, runs) / per(pm_t, pruns):.2f}x, CPU time "
              f"{per(ps_c, runs) / per(pm_c, pruns):.2f}x, memory {ps_m / pm_m:.2f}x ({runs:,} against {pruns:,} runs); "
              f"flat / packs (per run): wall time {per(flat_t, runs) / per(pm_t, pruns):.2f}x, CPU time "
              f"{per(flat_c, runs) / per(pm_c, pruns):.2f}x, memory {flat_m / pm_m:.2f}x")
        ok_t, ok_m = pa_t <= TARGETS["seconds"], pa_m <= TARGETS["gib"] * 1024
        print(f"{verdict(ok_t and ok_m)}: planning {pruns:,} runs with packs (whole workflow) took {pa_t:.1f} s "
              f"(target <= {TARGETS['seconds']:.0f} s: {verdict(ok_t)}) and {pa_m / 1024:.2f} GiB "
              f"(target <= {TARGETS['gib']:.0f} GiB: {verdict(ok_m)}); {pa_jobs:,} jobs", flush=True)
        if args.profile == "always" or (args.profile == "missed" and not (ok_t and ok_m)):
            print("profile of the packs case's whole-workflow dry run:")
            profile(all_cmd, pk, out / "profile-packs.txt")

        # a main start: the workflow writes the pack plan and every pack's file while it is parsed
        # (common.smk, not in a dry run); --list-rules parses, writes them, lists the rules and ends
        ml_t, ml_c, ml_m, _ = measure([SNAKEMAKE, "--list-rules", "--cores", "2", *base], pk)
        files = list((pk / "results" / "packs").glob("*.json"))
        size = sum(f.stat().st_size for f in files)
        print(f"a main start's parse that writes the plan and {len(files) - 1} pack files ({size / 2**20:.0f} MiB; "
              f"snakemake --list-rules): {ml_t:.1f} s wall, {ml_c:.1f} s CPU, {ml_m:.0f} MiB")
        first = sorted(f.stem for f in files if f.stem != "plan")[0]
        pjob = [SNAKEMAKE, "-n", *base, "--target-jobs", f"run_pack:pack={first}", "--allowed-rules", "run_pack",
                "--cores", "1", "--force"]
        pj_t, pj_c, pj_m, _ = measure(pjob, pk)
        pr_t, pr_c, pr_m, _ = measure([*pjob, "--mode", "remote"], pk)
        print(f"one pack job's Snakemake (parse + plan its target {first}, before its runner starts): {pj_t:.1f} s wall, "
              f"{pj_c:.1f} s CPU, {pj_m:.0f} MiB; with --mode remote (as the SLURM plugin's job runs it): {pr_t:.1f} s "
              f"wall, {pr_c:.1f} s CPU, {pr_m:.0f} MiB; against {job_t:.1f} s, {job_c:.1f} s CPU for a bundle job of "
              f"the {runs:,}-run grid above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
