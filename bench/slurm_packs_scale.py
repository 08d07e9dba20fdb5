"""Packs at scale on the local cluster (issue 57): 10,000 runs of a compiled app of about 0.1 s with
``bundle: packs``, and 500 of the same runs one job per run (``bundle: none``) for comparison, in one run.

    .venv/bin/python bench/slurm_packs_scale.py [--runs 10000] [--compare 500] [--repetitions 10]
                                                [--pack-runs 500] [--lanes 2] [--work DIR]
    .venv/bin/python bench/slurm_packs_scale.py --runs 200 --compare 40     # small, to try it out

Needs the local cluster (as root: .venv/bin/python -m perfsweep.cluster.local_slurm start: nodes n1, n2 of
1 CPU each, i.e. 2 parallel lanes for runs of p = 1) and the venv's MPICH mpicc. Builds tests/apps/ljrate.c
as tests/test_compiled_app.py does and sweeps it, ``{launcher} ljrate -s {s} -steps {steps} -passes
{passes} -clock cpu`` at p = 1, over s in (6, 8) x passes in (1, 2) x ``runs / repetitions / 4`` values
of steps spread over 1-250 (10,000 runs: 1,000 configurations x k = 10; its loop takes 0-0.45 s, 0.12 s
on average; a launch through srun, as the record's wall_time counts it, about 0.25 s), with ``bundle:
packs`` and ``pack: {runs: --pack-runs, minutes: 600, seconds_per_run: 1}`` (a pack holds runs of one
repetition round: 1,000 configurations / 500 = 2 packs a round, 20 in all), through
``snakemake runs --profile workflow/profiles/local-slurm`` (the target `runs`: the records only), timed
from Snakemake's start to its end. Then the comparison: ``--compare`` of those runs (the same s x passes,
evenly chosen values of steps, repetitions 0 to as many as fit; 500: 100 configurations x k = 5) with
``bundle: none``, one SLURM job per run, the same way. A sweep whose Snakemake has not ended ``--grace``
s after its last record appeared (the SLURM plugin waits forever for a job its status query no longer
shows) or that takes more than ``--limit`` s is stopped, and says so.

For each sweep it reads ``sdiag`` before and after (Slurm 22.05: the RPC counts of
REQUEST_SUBMIT_BATCH_JOB, every sbatch that reached the controller, and REQUEST_JOB_STEP_CREATE, every
job step srun created; and "Jobs submitted") and prints

- batch submissions (the sdiag difference; beside it the jobs Snakemake's log says it submitted and the
  distinct SLURM jobs the records name);
- job steps per run (the step creations over the runs);
- overhead: the wall time x ``--lanes`` parallel lanes / the sum of the records' ``wall_time`` (the app's
  launch as the runner timed it), 1.0 being every lane busy with a launch from the first second to the
  last;
- measured once: every run has its record, every record is ok, and every run has exactly one archived
  attempt (results/archive), which is ok;

and for packs where the rest of the time went: per lane the time spent inside packs (the first run's
``started_at`` to the last one's ``finished_at``) against the wall, and inside a pack the runner's time
between one record's ``finished_at`` and the next one's ``started_at`` and within a record outside its
launch (``finished_at - started_at - wall_time``). Targets (packs only): at most 50 submissions, at most
1.1 steps per run, overhead at most 1.3, every run measured once: PASS/FAIL each.

The sdiag figures count every job on the cluster: another user's jobs during a sweep count too (the
script says when the controller restarted in between, which resets them; the Snakemake and record counts
are this sweep's own). Nothing here asserts; the exit code is 0 when every packed target passed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SNAKEMAKE = str(BIN / "snakemake")
PERFSWEEP = str(BIN / "perfsweep")
PROFILE = REPO / "workflow" / "profiles" / "local-slurm"
SOURCE = REPO / "tests" / "apps" / "ljrate.c"
TARGETS = {"submissions": 50, "steps_per_run": 1.1, "overhead": 1.3}
S_VALUES = (6, 8)
PASSES = (1, 2)
STEPS_RANGE = (1, 250)
RPCS = ("REQUEST_SUBMIT_BATCH_JOB", "REQUEST_JOB_STEP_CREATE")


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def sdiag() -> dict:
    """Jobs submitted, the RPC counts of RPCS and since when the controller counts (its start or a reset)."""
    out = sh(["sdiag"]).stdout
    since = re.search(r"^Data since\s+(.*?)\s*$", out, re.M)
    jobs = re.search(r"^Jobs submitted:\s*(\d+)", out, re.M)
    rpc = {name: int(m.group(1)) if (m := re.search(rf"^\s*{name}\s+\(\s*\d+\)\s+count:(\d+)", out, re.M)) else 0
           for name in RPCS}
    return {"since": since.group(1) if since else None, "jobs_submitted": int(jobs.group(1)) if jobs else None,
            **rpc}


def cluster_ready(timeout: float) -> str:
    """Wait until every node of the cluster is idle (another user's fault tests may have one down); sinfo's lines."""
    deadline = time.time() + timeout
    while True:
        out = sh(["sinfo", "-h", "-N", "-o", "%N %t %c"]).stdout
        states = [line.split() for line in out.splitlines() if line.strip()]
        if states and all(s[1].rstrip("*~#!%$@^-") == "idle" for s in states):
            return ", ".join(f"{n} {t} ({c} CPU)" for n, t, c in states)
        if time.time() > deadline:
            return "NOT READY: " + ", ".join(" ".join(s) for s in states)
        time.sleep(5)


def build(where: Path) -> Path:
    """ljrate built with the venv's MPICH mpicc (as tests/test_compiled_app.py builds it)."""
    out = where / "ljrate"
    subprocess.run([str(BIN / "mpicc"), "-O2", "-o", str(out), str(SOURCE), "-lm"], check=True)
    return out


def steps_values(count: int) -> list[int]:
    lo, hi = STEPS_RANGE
    if count == 1:
        return [(lo + hi) // 2]
    values = sorted({round(lo + i * (hi - lo) / (count - 1)) for i in range(count)})
    if len(values) != count:
        sys.exit(f"{count} values of steps do not fit into {lo}-{hi}")
    return values


def config(app: Path, steps: list[int], k: int, bundle: str, pack_runs: int, timeout: float) -> dict:
    cfg = {
        "app": {"command": f"{{launcher}} {app} -s {{s}} -steps {{steps}} -passes {{passes}} -clock cpu",
                "time_pattern": r"Loop time: ([0-9.eE+-]+) s",
                "patterns": {"timesteps_per_s": {"pattern": r"Performance: ([0-9.eE+-]+) timesteps/s",
                                                 "unit": "steps/s", "better": "higher"}}},
        "parameters": {"s": 6, "steps": 20, "passes": 1, "p": 1},
        "repetitions": k,
        "timeout": timeout,
        "bundle": bundle,
        "results": "results",
        "studies": {"ljrate": {"vary": {"s": list(S_VALUES), "passes": list(PASSES), "steps": steps}}},
    }
    if len(steps) == 1:  # a varied parameter needs 2 values
        cfg["parameters"]["steps"] = steps[0]
        del cfg["studies"]["ljrate"]["vary"]["steps"]
    if bundle == "packs":
        cfg["pack"] = {"runs": pack_runs, "minutes": 600, "seconds_per_run": 1}
    return cfg


def when(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def read_runs(results: Path) -> tuple[list[dict], dict[tuple, list[dict]], list[str]]:
    """(records, archived attempts per run, unreadable files)."""
    records, bad = [], []
    for path in sorted((results / "runs").rglob("rep*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            bad.append(str(path))
    attempts: dict[tuple, list[dict]] = defaultdict(list)
    for path in sorted((results / "archive").rglob("rep*.attempt*.json")):
        study, config_id = path.parent.parent.name, path.parent.name
        rep = int(path.name.split(".", 1)[0][3:])
        try:
            attempts[(study, config_id, rep)].append(json.loads(path.read_text()))
        except (OSError, ValueError):
            bad.append(str(path))
    return records, attempts, bad


def quantiles(values: list[float], ms: bool = True) -> str:
    if not values:
        return "none"
    v, f, u = sorted(values), (1000.0 if ms else 1.0), ("ms" if ms else "s")
    q95 = v[min(len(v) - 1, int(0.95 * len(v)))]
    return (f"median {statistics.median(v) * f:.1f} {u}, mean {statistics.fmean(v) * f:.1f} {u}, "
            f"p95 {q95 * f:.1f} {u}, max {v[-1] * f:.1f} {u}, sum {sum(v):.1f} s")


def stop(proc: subprocess.Popen) -> None:
    """End this Snakemake: SIGTERM (it cancels its jobs), then SIGINT, then SIGKILL."""
    for sig in (15, 2, 9):
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            continue


def sweep(name: str, work: Path, cfg: dict, expected: int, lanes: int, wait_ready: float, limit: float,
          grace: float) -> dict:
    """Run one sweep through the local cluster and print its figures; the figures."""
    work.mkdir(parents=True)
    (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    print(f"\n## {name}: {expected:,} runs, bundle: {cfg['bundle']} (work directory {work})", flush=True)
    if cfg["bundle"] == "packs":
        plan = sh([PERFSWEEP, "plan", "c.yaml"], cwd=work)
        lines = plan.stdout.splitlines()
        lines = lines[next((i for i, line in enumerate(lines) if line.startswith("packs:")), len(lines)):]
        shown = lines[:4] + ([f"  ... ({len(lines) - 5} more lines)", lines[-1]] if len(lines) > 5 else lines[4:])
        print("perfsweep plan c.yaml:", *(f"    {line}" for line in shown), sep="\n")
        if plan.returncode != 0:
            print(f"    (exit {plan.returncode}: {plan.stderr.strip()[-500:]})")
    print(f"nodes: {cluster_ready(wait_ready)}", flush=True)
    cmd = [SNAKEMAKE, "runs", "--snakefile", str(REPO / "Snakefile"), "--profile", str(PROFILE),
           "--configfile", "c.yaml"]
    before = sdiag()
    start = time.time()
    stopped = None
    with open(work / "snakemake.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT)
        all_done = None
        while proc.poll() is None:
            time.sleep(5)
            if all_done is None and sum(1 for _ in (work / "results" / "runs").rglob("rep*.json")) >= expected:
                all_done = time.time()
            if all_done is not None and time.time() - all_done > grace:
                stopped = f"every record was there {grace:.0f} s before and Snakemake had not ended: stopped"
            elif time.time() - start > limit:
                stopped = f"past the limit of {limit:.0f} s: stopped"
            if stopped:
                stop(proc)
                break
    wall = time.time() - start
    after = sdiag()
    load = os.getloadavg()
    log_text = (work / "snakemake.log").read_text(errors="replace")
    own_submitted = len(re.findall(r"submitted with SLURM jobid", log_text))
    records, attempts, bad = read_runs(work / "results")
    ok = [r for r in records if r.get("status") == "ok"]
    runs = {(r["study"], r["config_id"], r["repetition"]) for r in records}
    once = [key for key in runs if len(attempts.get(key, [])) == 1 and attempts[key][0].get("status") == "ok"]
    not_once = Counter(len(attempts.get(key, [])) for key in runs if key not in set(once))
    app_wall = sum(float(r.get("wall_time") or 0.0) for r in records)
    jobs = {str((r.get("slurm") or {}).get("job_id")) for r in records}
    reset = before["since"] != after["since"]
    submissions = after["REQUEST_SUBMIT_BATCH_JOB"] - before["REQUEST_SUBMIT_BATCH_JOB"]
    steps = after["REQUEST_JOB_STEP_CREATE"] - before["REQUEST_JOB_STEP_CREATE"]
    jobs_submitted = (after["jobs_submitted"] or 0) - (before["jobs_submitted"] or 0)
    fig = {
        "name": name, "runs": expected, "returncode": proc.returncode, "wall": wall, "records": len(records),
        "ok": len(ok), "once": len(once), "app_wall": app_wall, "submissions": submissions, "steps": steps,
        "steps_per_run": steps / max(1, expected), "overhead": wall * lanes / app_wall if app_wall else float("inf"),
        "own_submitted": own_submitted, "jobs": len(jobs), "reset": reset, "stopped": stopped,
        "measured_once": (not stopped and len(records) == expected and len(ok) == expected
                          and len(once) == expected and not bad),
    }
    print(f"snakemake exit {proc.returncode}; wall {wall:.1f} s; "
          f"load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if stopped:
        print(f"!! {stopped}")
    if "Falling back to 'sacct'" in log_text:
        print("!! the SLURM plugin fell back to sacct for a status query (`scontrol show config` did not answer); "
              "this cluster has no accounting, so jobs it cannot see any more stay 'active'")
    if reset:
        print(f"!! the controller's counters were reset during the sweep (sdiag 'Data since' {before['since']} -> "
              f"{after['since']}): the sdiag figures below are not this sweep's")
    print(f"batch submissions (sdiag REQUEST_SUBMIT_BATCH_JOB): {submissions} (Jobs submitted: {jobs_submitted}; "
          f"Snakemake's log: {own_submitted} submitted; the records name {len(jobs)} SLURM jobs)")
    print(f"job steps (sdiag REQUEST_JOB_STEP_CREATE): {steps}, {fig['steps_per_run']:.3f} per run")
    print(f"records: {len(records):,} of {expected:,}, {len(ok):,} ok; measured once (one archived attempt, ok): "
          f"{len(once):,}" + (f"; others by attempts: {dict(not_once)}" if not_once else "")
          + (f"; unreadable: {len(bad)}" if bad else ""))
    if records:
        print(f"sum of the records' wall_time: {app_wall:.1f} s (mean {app_wall / len(records):.3f} s a run; "
              f"their loop time: mean {statistics.fmean(float(r.get('time') or 0) for r in records):.3f} s)")
    print(f"overhead: wall {wall:.1f} s x {lanes} lanes / {app_wall:.1f} s = {fig['overhead']:.3f}")
    if cfg["bundle"] == "packs" and records:
        fig.update(pack_time(records, wall, lanes, start))
    return fig


def pack_time(records: list[dict], wall: float, lanes: int, start: float) -> dict:
    """Where the time of the packed sweep went: lanes' time in packs, the runner's time between and around runs."""
    by_pack: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_pack[(r.get("pack") or {}).get("id", "?")].append(r)
    between, inside, spans, per_node = [], [], [], defaultdict(float)
    first_start, last_end = float("inf"), 0.0
    for pid, recs in by_pack.items():
        recs.sort(key=lambda r: (r["pack"]["index"], when(r["started_at"])))
        for a, b in zip(recs, recs[1:]):
            between.append(when(b["started_at"]) - when(a["finished_at"]))
        for r in recs:
            inside.append(when(r["finished_at"]) - when(r["started_at"]) - float(r.get("wall_time") or 0.0))
        span = when(recs[-1]["finished_at"]) - when(recs[0]["started_at"])
        spans.append(span)
        node = (recs[0].get("slurm") or {}).get("nodelist") or recs[0].get("host")
        per_node[node] += span
        first_start = min(first_start, when(recs[0]["started_at"]))
        last_end = max(last_end, when(recs[-1]["finished_at"]))
    # per lane (node), the packs one after the other: from one pack's last run to the next one's first
    # (its job's end, the next job's start, the Snakemake and srun inside it, the runner's start)
    turnaround = []
    lanes_packs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for recs in by_pack.values():
        node = (recs[0].get("slurm") or {}).get("nodelist") or recs[0].get("host")
        lanes_packs[node].append((when(recs[0]["started_at"]), when(recs[-1]["finished_at"])))
    for spans_ in lanes_packs.values():
        spans_.sort()
        turnaround += [b[0] - a[1] for a, b in zip(spans_, spans_[1:])]
    sizes = sorted(len(v) for v in by_pack.values())
    app = sum(float(r.get("wall_time") or 0.0) for r in records)
    in_packs = sum(spans)
    print(f"packs: {len(by_pack)} ({sizes[0]}-{sizes[-1]} runs each); pack spans (first run's start to last "
          f"run's end): {in_packs:.1f} s in all, median {statistics.median(spans):.1f} s; per node: "
          + ", ".join(f"{n} {t:.1f} s" for n, t in sorted(per_node.items())))
    print(f"  the first run started {first_start - start:.1f} s after Snakemake's start, the last ended "
          f"{start + wall - last_end:.1f} s before Snakemake's end")
    print(f"  lanes x wall {lanes * wall:.1f} s = launches {app:.1f} s + runner inside packs "
          f"{in_packs - app:.1f} s + outside packs {lanes * wall - in_packs:.1f} s "
          f"(submission, queueing, each job's start and Snakemake, idle lanes)")
    print("  from one pack's last run to the next pack's first run on the same node: "
          + quantiles(turnaround, ms=False))
    print(f"  between one record's finished_at and the next one's started_at: {quantiles(between)}")
    print(f"  within a record, outside its launch (finished_at - started_at - wall_time): {quantiles(inside)}")
    print(f"  the runner per run in all: {(in_packs - app) / len(records) * 1000:.1f} ms "
          f"(against {app / len(records) * 1000:.1f} ms of launch)")
    return {"in_packs": in_packs, "between": sum(between), "inside": sum(inside), "packs": len(by_pack)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10000, help="packed runs (a multiple of 4 x --repetitions)")
    ap.add_argument("--compare", type=int, default=500, help="runs one job each (a multiple of 4; 0: none)")
    ap.add_argument("--repetitions", type=int, default=10, help="k of the packed sweep")
    ap.add_argument("--pack-runs", type=int, default=500, help="pack: {runs: N}")
    ap.add_argument("--lanes", type=int, default=2, help="runs the cluster runs at once (2 nodes x 1 CPU)")
    ap.add_argument("--timeout", type=float, default=30.0, help="a run's timeout (config timeout:)")
    ap.add_argument("--wait-ready", type=float, default=300.0, help="seconds to wait for every node to be idle")
    ap.add_argument("--limit", type=float, default=7200.0, help="seconds a sweep may take before it is stopped")
    ap.add_argument("--grace", type=float, default=300.0,
                    help="seconds Snakemake may take to end once every record is there (else it is stopped)")
    ap.add_argument("--work", help="keep the sweeps here (default: a temporary directory, removed)")
    args = ap.parse_args()
    k = args.repetitions
    if args.runs % (4 * k):
        sys.exit(f"--runs must be a multiple of 4 x --repetitions = {4 * k}")
    steps = steps_values(args.runs // k // 4)
    compare = None
    if args.compare:
        # the first --compare of the packed sweep's runs: the same s x passes, evenly chosen value of steps,
        # repetitions 0..kc-1 (kc as large as fits, at most k)
        kc = next((kc for kc in range(k, 0, -1) if args.compare % (4 * kc) == 0
                   and args.compare // (4 * kc) <= len(steps)), None)
        if kc is None:
            sys.exit("--compare must be a multiple of 4 and at most --runs")
        n = args.compare // (4 * kc)
        compare = ([steps[round(i * (len(steps) - 1) / max(1, n - 1))] for i in range(n)] if n > 1
                   else [steps[len(steps) // 2]], kc)

    commit = sh(["git", "rev-parse", "--short", "HEAD"], cwd=REPO).stdout.strip()
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no", "src", "workflow", "Snakefile"],
               cwd=REPO).stdout.strip()
    load = os.getloadavg()
    version = sh(["sinfo", "--version"]).stdout.strip()
    print(f"# bench/slurm_packs_scale.py --runs {args.runs} --compare {args.compare} --repetitions {k} "
          f"--pack-runs {args.pack_runs} --lanes {args.lanes}")
    print(f"# commit {commit}" + (" (src/ or workflow/ changed in the work tree: "
                                   + ", ".join(line.split()[-1] for line in dirty.splitlines()) + ")" if dirty else "")
          + f"; {version}; {dt.datetime.now().astimezone().isoformat(timespec='seconds')}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores")
    root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="perfsweep-packs-scale-", dir="/tmp"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        app = build(root)
        print(f"# app: {app.name} built from {SOURCE.relative_to(REPO)} with {BIN / 'mpicc'}; s {list(S_VALUES)} x "
              f"passes {list(PASSES)} x {len(steps)} values of steps ({steps[0]}-{steps[-1]}) = "
              f"{4 * len(steps):,} configurations x k = {k}, p = 1")
        packed = sweep("packs", root / "packs", config(app, steps, k, "packs", args.pack_runs, args.timeout),
                       args.runs, args.lanes, args.wait_ready, args.limit, args.grace)
        single = None
        if compare:
            csteps, kc = compare
            print(f"\n# comparison: {args.compare} of the same runs, one job per run: s x passes x {len(csteps)} "
                  f"values of steps ({', '.join(map(str, csteps[:8]))}{', ...' if len(csteps) > 8 else ''}) x k = {kc}")
            single = sweep("one job per run", root / "single", config(app, csteps, kc, "none", args.pack_runs,
                                                                      args.timeout), args.compare, args.lanes,
                           args.wait_ready, args.limit, args.grace)
    finally:
        if not args.work:
            shutil.rmtree(root, ignore_errors=True)

    head = sh(["git", "rev-parse", "--short", "HEAD"], cwd=REPO).stdout.strip()
    if head != commit:
        print(f"\n# HEAD moved to {head} during the bench (the sweeps' jobs read the work tree as they started)")
    print("\n## Summary")
    rows = [packed] + ([single] if single else [])
    print(f"{'':18} {'runs':>7} {'wall s':>8} {'subm.':>6} {'steps/run':>9} {'overhead':>8} {'s/run':>7} "
          f"{'once':>7}")
    for f in rows:
        print(f"{f['name']:18} {f['runs']:>7,} {f['wall']:>8.1f} {f['submissions']:>6} {f['steps_per_run']:>9.3f} "
              f"{f['overhead']:>8.3f} {f['wall'] * args.lanes / f['runs']:>7.3f} {f['once']:>7,}")
    if single:
        print(f"lane-seconds per run: packs {packed['wall'] * args.lanes / packed['runs']:.3f} s, one job per run "
              f"{single['wall'] * args.lanes / single['runs']:.3f} s "
              f"({single['wall'] / single['runs'] / (packed['wall'] / packed['runs']):.1f}x); submissions per run: "
              f"{packed['submissions'] / packed['runs']:.4f} against {single['submissions'] / single['runs']:.3f}")
    checks = [
        ("batch submissions", packed["submissions"] <= TARGETS["submissions"] and not packed["reset"],
         f"{packed['submissions']} <= {TARGETS['submissions']}"),
        ("job steps per run", packed["steps_per_run"] <= TARGETS["steps_per_run"] and not packed["reset"],
         f"{packed['steps_per_run']:.3f} <= {TARGETS['steps_per_run']}"),
        ("overhead", packed["overhead"] <= TARGETS["overhead"] and not packed["stopped"],
         f"{packed['overhead']:.3f} <= {TARGETS['overhead']}" + (" (Snakemake stopped)" if packed["stopped"] else "")),
        ("every run measured once", packed["measured_once"], f"{packed['once']:,} of {packed['runs']:,}"),
    ]
    for what, good, text in checks:
        print(f"{'PASS' if good else 'FAIL'}  {what}: {text}")
    return 0 if all(good for _, good, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
