"""Where the time after the runs goes: per stage (rule) CPU and wall seconds of the post-processing of a
finished sweep, the orchestration cost of one round of ``perfsweep run`` and the HTML report, for this
checkout and for a baseline revision, measured in the same run on identical copies of the records.

    .venv/bin/python bench/postprocessing.py --results /tmp/mr/results --config /tmp/mr/config/config.yaml
        [--baseline main] [--cores 2] [--repeat 1] [--keep DIR]

--results is a results directory of a finished sweep (only its records are copied: runs/, plan/, archive/;
nothing there is changed); --config the config it was measured with (so that the DAG asks for exactly
those records and no run is launched). Per variant (the baseline revision, extracted with `git archive`,
and this checkout) and repeat, in a fresh copy:

  round        `snakemake runs` with every record present: what each round of `perfsweep run` costs
               before it measures anything (DAG, recovery scan of the records); not in the total
  post         `snakemake` (all): every table, model, figure and report page of the sweep
  perfsweep run  `perfsweep run CONFIG` once all is made: its orchestration alone (the rounds' Snakemake
               invocations, the final one and the HTML report)

Each Python process started under it (the main Snakemake and each `script:` job) appends its own CPU
time (user + system, from getrusage at exit) and wall time to a log, through a sitecustomize module put
on PYTHONPATH (jobs inherit it); the script jobs are grouped by their script (= stage = rule; rule model_figures runs only where a zip
report asks for it). CPU time is less
noisy than wall time on a shared machine; the wall times are those of the whole invocations.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
RECORD_DIRS = ("runs", "plan", "archive", "bundles")  # what a sweep measured; the rest is derived

HOOK = '''
import atexit, json, os, resource, sys, time
_log = os.environ.get("PERFSWEEP_BENCH_LOG")
if _log:
    def _record():
        try:
            import psutil
            start = psutil.Process().create_time()
        except Exception:
            start = None
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        rec = {"argv": sys.argv, "pid": os.getpid(), "start": start, "end": time.time(),
               "cpu": me.ru_utime + me.ru_stime, "children_cpu": kids.ru_utime + kids.ru_stime}
        with open(_log, "a") as f:
            f.write(json.dumps(rec) + "\\n")
    atexit.register(_record)
'''


def stage_of(argv: list[str]) -> str:
    """The stage a Python process ran: its script (Snakemake runs scripts/<x>.py as
    .snakemake/scripts/tmp<random>.<x>.py), the main Snakemake, or another Python process."""
    first = Path(argv[0]).name if argv else ""
    if first.startswith("tmp") and first.endswith(".py") and first.count(".") >= 2:
        return first.split(".", 1)[1][: -len(".py")]
    if "snakemake" in first or Path(argv[0]).parent.name == "snakemake":
        return "snakemake (main process)"
    if first == "-c":
        return "perfsweep CLI process"
    return "other: " + " ".join(argv[:2])[:40]


def checkout(rev: str, into: Path) -> Path:
    """The tree of ``rev`` of this repository (its Snakefile, workflow, scripts and src) in ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def prepare(workdir: Path, results: Path, config: Path) -> Path:
    """A working directory with a copy of the sweep's records and its config pointed at them."""
    workdir.mkdir(parents=True)
    for name in RECORD_DIRS:
        if (results / name).is_dir():
            shutil.copytree(results / name, workdir / "results" / name, symlinks=True)  # keeps mtimes
    cfg = yaml.safe_load(config.read_text())
    cfg["results"] = "results"
    cfgfile = workdir / "config.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return cfgfile


def invoke(tree: Path, workdir: Path, cfgfile: Path, hook: Path, log: Path, extra: list[str]) -> dict:
    """One Snakemake invocation of ``tree``'s workflow in ``workdir`` (or with extra[0] == "perfsweep",
    its CLI): its wall time, the CPU time of it and every process it waited for, and the log records of
    its Python processes."""
    env = dict(os.environ, PERFSWEEP_BENCH_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(hook), str(tree / "src")]))
    if extra[:1] == ["perfsweep"]:  # the CLI of that tree (workflow_dir: the checkout it is imported from)
        cmd = [sys.executable, "-c", "import sys; from perfsweep.cli import main; sys.exit(main())",
               *extra[1:], str(cfgfile)]
    else:
        cmd = [sys.executable, "-m", "snakemake", *extra, "--snakefile", str(tree / "Snakefile"), "--configfile",
               str(cfgfile)]  # last: --configfile takes every word after it
    log.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed in {workdir} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    # Snakemake 9 prints its jobs on stdout
    launched = re.findall(r"^\s*(?:local)?rule run:", proc.stdout + proc.stderr, re.MULTILINE)
    if launched:
        sys.exit(f"bench: {workdir}: the workflow measures {len(launched)} runs, so the variants would compare "
                 "different records; give --config the sweep's own config, and --results records of this "
                 "checkout's launch (a sweep measured with an older perfsweep is measured again)")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    procs = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return {"wall": wall, "cpu": cpu, "procs": procs}


def by_stage(procs: list[dict]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"jobs": 0, "cpu": 0.0, "wall": 0.0})
    for p in procs:
        s = out[stage_of(p["argv"])]
        s["jobs"] += 1
        s["cpu"] += p["cpu"]
        s["wall"] += (p["end"] - p["start"]) if p["start"] else 0.0
    return dict(out)


def measure(tree: Path, scratch: Path, results: Path, config: Path, hook: Path, cores: int) -> dict:
    cfgfile = prepare(scratch, results, config)
    log = scratch / "bench-procs.jsonl"
    invoke(tree, scratch, cfgfile, hook, log, ["runs", "-n", "--cores", str(cores)])  # exits if runs are missing
    steps = {
        "round": ["runs", "--cores", str(cores)],
        "post": ["--cores", str(cores)],
        "perfsweep run": ["perfsweep", "run", "--cores", str(cores)],  # + the config
    }
    return {name: invoke(tree, scratch, cfgfile, hook, log, extra) for name, extra in steps.items()}


def best(runs: list[dict]) -> dict:
    """Per step, the repeat with the least CPU time (the least disturbed one), its stages summed as is."""
    return {step: min((r[step] for r in runs), key=lambda m: m["cpu"]) for step in runs[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True, type=Path, help="results directory of a finished sweep")
    ap.add_argument("--config", required=True, type=Path, help="the config that sweep was measured with")
    ap.add_argument("--baseline", default="main", help="git revision to compare with (default: main)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="repeats per variant; the least CPU time counts")
    ap.add_argument("--keep", type=Path, default=None, help="work in this (new) directory and keep it")
    args = ap.parse_args()
    if not (args.results / "runs").is_dir():
        sys.exit(f"bench: {args.results}: no runs/ (give the results directory of a finished sweep)")
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="perfsweep-post-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        hook = tmp / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        variants = {f"baseline ({args.baseline})": checkout(args.baseline, tmp / "baseline-tree"),
                    "this checkout": REPO}
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for i in range(args.repeat):  # alternate, so that a disturbance hits both alike
            for k, (name, tree) in enumerate(variants.items()):
                print(f"bench: {name}, repeat {i + 1} of {args.repeat} ...", file=sys.stderr, flush=True)
                runs[name].append(measure(tree, tmp / f"work-{k}-{i}", args.results, args.config, hook,
                                          args.cores))
        report(args, {name: best(r) for name, r in runs.items()})
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def report(args, results: dict[str, dict]) -> None:
    (base_name, base), (new_name, new) = results.items()
    print(f"records  {args.results} (config {args.config}), --cores {args.cores}, best of {args.repeat}")
    print(f"columns  CPU s / wall s (wall of a stage: its jobs' wall times summed); baseline = {base_name}")
    print()
    print(f"{'step / stage':34} {'jobs':>5} {'baseline CPU':>12} {'wall':>7} {'jobs':>5} {'now CPU':>8} "
          f"{'wall':>7} {'CPU now/base':>12}")
    total = {"base": [0.0, 0.0], "new": [0.0, 0.0]}
    for step in base:
        b, n = base[step], new[step]
        bs, ns = by_stage(b["procs"]), by_stage(n["procs"])
        for stage in sorted(set(bs) | set(ns), key=lambda s: -max(bs.get(s, {}).get("cpu", 0), ns.get(s, {}).get("cpu", 0))):
            x = bs.get(stage, {"jobs": 0, "cpu": 0.0, "wall": 0.0})
            y = ns.get(stage, {"jobs": 0, "cpu": 0.0, "wall": 0.0})
            ratio = f"{y['cpu'] / x['cpu']:12.2f}" if x["cpu"] > 0 else f"{'-':>12}"
            print(f"  {step + ': ' + stage:32} {x['jobs']:5d} {x['cpu']:12.1f} {x['wall']:7.1f} {y['jobs']:5d} "
                  f"{y['cpu']:8.1f} {y['wall']:7.1f} {ratio}")
        print(f"{step + ' (whole invocation)':34} {'':5} {b['cpu']:12.1f} {b['wall']:7.1f} {'':5} {n['cpu']:8.1f} "
              f"{n['wall']:7.1f} {n['cpu'] / b['cpu']:12.2f}")
        print()
        if step != "round":  # in perfsweep run
            total["base"][0] += b["cpu"]
            total["base"][1] += b["wall"]
            total["new"][0] += n["cpu"]
            total["new"][1] += n["wall"]
    (bc, bw), (nc, nw) = total["base"], total["new"]
    print(f"{'total (post + perfsweep run)':34} {'':5} {bc:12.1f} {bw:7.1f} {'':5} {nc:8.1f} {nw:7.1f} "
          f"{nc / bc:12.2f}")
    print(f"wall now/baseline: {nw / bw:.2f}")
    wait = slurm_probe_wait()
    if wait is not None:
        print(f"note: every Snakemake start here waits {wait:.1f} s of that wall time for `scontrol show config` "
              "(snakemake-executor-plugin-slurm asks the SLURM controller at import; none answers here)")


def slurm_probe_wait() -> float | None:
    """Wall seconds of what the SLURM executor plugin runs when Snakemake imports it (None: no scontrol)."""
    if shutil.which("scontrol") is None:
        return None
    t0 = time.perf_counter()
    try:
        subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
