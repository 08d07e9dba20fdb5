"""The history store at issue 56's scale: 1,000 recorded sweeps of 100 call paths each (one study), and on
it ``perfsweep history add`` of one more sweep (target at most 2 s), ``perfsweep history trend --study S
--html PAGE`` (at most 10 s) and ``perfsweep compare NEW --history 3`` against the same three
directories named by hand (at most 1.5x).

    .venv/bin/python bench/history_scale.py [--sweeps 1000] [--paths 100] [--repeats 3] [--out DIR] [--keep DIR]

The sweeps: one study T_n_p (n x p on a 5 x 4 grid, 3 repetitions: 60 run records a sweep) of ``--paths``
call paths, their models bench/compare_scale.py's (a few fitted models of T(n, p) with 40 resamples,
their coefficients scaled per call path: no model is fitted per sweep). Each sweep is written as a results
tree (models/T_n_p/models.json, tables/T_n_p/aggregate.csv, runs/T_n_p/<config>/rep<k>.json; one tree
rewritten in place per sweep) with, from a seeded RNG, a factor per call path and sweep (2 % log-normal)
and one per sweep (1 %), measured an hour after the one before; from sweep 700 (0.7 ``--sweeps``) every
tenth call path is 20 % slower, from sweep 850 (0.85 ``--sweeps``) two call paths grow like n^2 (a class change). They are read and recorded
in-process (perfsweep.history.sweep.read_tree, perfsweep.history.record.record, labels branch=main), as
``perfsweep history add`` does: the filling's own time is printed too.

Then, on the filled store, each command a new process of the CLI (Python's start-up and imports
included), ``--repeats`` times, the median printed beside its target and a baseline of the same run,
``perfsweep predict`` of one model of NEW's models.json (the CLI's fixed cost):

- ``perfsweep compare B1 B2 B3 NEW --format json`` (the last three sweeps' trees, kept) and ``perfsweep
  compare NEW --history 3 --store FILE --format json`` (NEW: sweep 1,001, not recorded yet), interleaved;
  their rows and exit codes checked to be the same; the ratio of their medians;
- ``perfsweep history trend --store FILE --study T_n_p --html PAGE`` (its text table on stdout as well),
  stopped after ``--trend-limit`` s (120) and no more rounds after one of over 3x its target; the change
  points its table names; in-process (untimed by the target) its parts: the query and series without
  change points, the text table, the page, change_points() of two series of each kind, extrapolated;
- ``perfsweep history add TREE --store FILE`` of one more sweep each round (NEW, then sweeps 1,002, ...),
  and in-process read_tree and record() of further sweeps.

A target missed: the command run once more under cProfile (the trend: change_points() of one series
in-process; a CLI run of a slow trend under cProfile takes minutes), its top entries printed and the
profile written to ``<out>/profile-<name>.txt``. The output (this stdout) goes to ``<out>/output.txt``
as well.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import json
import os
import pstats
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_scale import PERFSWEEP, ROOT, base_models, git, measured_commit, timed  # noqa: E402
from tee import Tee  # noqa: E402 (bench/tee.py)

STUDY = "T_n_p"
TARGETS = {"add": 2.0, "record": 2.0, "trend": 10.0, "ratio": 1.5}
STEP = 1.2  # from sweep 0.7 --sweeps on (700 of 1,000) every tenth call path is 20 % slower; from 0.85 --sweeps
# on (850) two call paths (k % 50 == 1) grow like n^2
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
MACHINE = {"cpu_model": "Synthetic CPU @ 2.0GHz", "cores": 2, "memory": 24 * 2 ** 30, "kernel": "6.1.0-bench"}


def stamp(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds")


class Sweeps:
    """The synthetic sweeps: ``write(root, i)`` writes sweep ``i`` (1-based) as a results tree."""

    def __init__(self, models: list[dict], paths: int, seed: int, sweeps: int):
        self.paths = paths
        self.step_at, self.class_at = round(0.7 * sweeps), round(0.85 * sweeps)
        self.seed = seed
        self.models = models
        rng = np.random.default_rng(seed)
        self.scale = np.exp(rng.normal(0, 0.5, paths))  # each call path's own size
        self.regions = [f"main/solver/kernel_{k:04d}" for k in range(paths)]
        self.points = [tuple(p) for p in models[0]["points"]]  # the 5 x 4 grid, every model's
        assert all([tuple(p) for p in m["points"]] == self.points for m in models)
        self.configs = [f"n={int(n)}_p={int(p)}" for n, p in self.points]
        self.stepped = [k for k in range(paths) if k % 10 == 0]
        self.grown = [k for k in range(paths) if k % 50 == 1]

    def factors(self, i: int) -> tuple[np.ndarray, list[dict]]:
        """Sweep i's factor per call path and model per call path."""
        rng = np.random.default_rng([self.seed, i])
        f = self.scale * np.exp(rng.normal(0, 0.02, self.paths)) * float(np.exp(rng.normal(0, 0.01)))
        if i >= self.step_at:
            f[self.stepped] *= STEP
        forms = [self.models[k % len(self.models)] for k in range(self.paths)]
        if i >= self.class_at:
            for k in self.grown:
                forms[k] = self.models[2]
        return f, forms

    def write(self, root: Path, i: int) -> None:
        f, forms = self.factors(i)
        rng = np.random.default_rng([self.seed, i, 1])
        entries, rows = [], ["config_id,n,p,region,metric,median,values"]
        reps = np.exp(rng.normal(0, 0.03, (self.paths, len(self.points), 3)))
        for k, (model, s) in enumerate(zip(forms, f)):
            s = float(s)
            m = dict(model)
            m["coefficients"] = [c * s for c in model["coefficients"]]
            m["values"] = [v * s for v in model["values"]]
            m["bootstrap"] = [{"terms": b["terms"], "coefficients": [c * s for c in b["coefficients"]]}
                              for b in model["bootstrap"]]
            m["alternatives"] = [{**a, "coefficients": [c * s for c in a["coefficients"]]} for a in model["alternatives"]]
            entries.append({"study": STUDY, "region": self.regions[k], "metric": "time", "fixed": {}, "processes": "p",
                            "level": 0.9, "notes": [], "model": m})
            values = np.asarray(m["values"])[:, None] * reps[k]
            for (n, p), config, v, mid in zip(self.points, self.configs, values.tolist(),
                                              np.median(values, axis=1).tolist()):
                rows.append(f"{config},{n!r},{p!r},{self.regions[k]},time,{mid!r},{' '.join(map(repr, v))}")
        models_dir, tables = root / "models" / STUDY, root / "tables" / STUDY
        # a tree rewritten: its files removed first (ext4 flushes a file truncated and written again on close)
        for old in [models_dir / "models.json", tables / "aggregate.csv", *root.glob(f"runs/{STUDY}/*/rep*.json")]:
            old.unlink(missing_ok=True)
        models_dir.mkdir(parents=True, exist_ok=True)
        tables.mkdir(parents=True, exist_ok=True)
        (models_dir / "models.json").write_text(json.dumps(entries))
        (tables / "aggregate.csv").write_text("\n".join(rows) + "\n")
        start = T0 + timedelta(hours=i)
        totals = np.exp(rng.normal(0, 0.02, (len(self.points), 3))) * float(np.sum(f))
        q = 0
        for rep in range(3):  # the repetitions in rounds, as perfsweep runs them
            for c, ((n, p), config) in enumerate(zip(self.points, self.configs)):
                run_dir = root / "runs" / STUDY / config
                run_dir.mkdir(parents=True, exist_ok=True)
                began = start + timedelta(seconds=10 * q)
                command = ["./app", "--n", str(int(n))]
                record = {"schema": "perfsweep.run/1", "run_id": f"{STUDY}/{config}/rep{rep}", "study": STUDY,
                          "config_id": config, "repetition": rep, "parameters": {"n": int(n), "p": int(p)},
                          "attempt": 1, "started_at": stamp(began),
                          "launch": {"command": command, "spec_command": command, "launcher": "{mpiexec} -n {p}"},
                          "host": "bench-host", "cores": 2, "slurm": None, "machine": MACHINE,
                          "perfsweep_version": "0.1.0", "finished_at": stamp(began + timedelta(seconds=8)),
                          "wall_time": 8.0, "returncode": 0, "time": float(totals[c, rep]), "nodes": ["bench-host"],
                          "status": "ok", "error": None}
                (run_dir / f"rep{rep}.json").write_text(json.dumps(record, indent=1))  # (removed above)
                q += 1


def timed_limit(cmd: list[str], limit: float) -> tuple[float, subprocess.CompletedProcess | None]:
    """compare_scale.timed, stopped after ``limit`` seconds (then None)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, None
    return time.perf_counter() - start, proc


def found_changes(text: str, sweeps: Sweeps) -> str:
    """What the trend's text table says of its change points (its header: a line per series)."""
    changes, classes = {}, {}
    for line in text.splitlines():
        m = re.match(rf"# {STUDY} / (\S+) / time: changes at (.*?)(?:; class changes at (.*))?$", line)
        if m:
            changes[m[1]] = [] if m[2] == "none" else [c.split() for c in m[2].split("; ")]
            classes[m[1]] = re.findall(r"#(\d+)", m[3] or "")
    step, grow = str(sweeps.step_at), str(sweeps.class_at)
    hits = [float(c[1][1:]) for k in sweeps.stepped for c in changes.get(sweeps.regions[k], [])
            if c[0] == "#" + step and len(c) > 1]
    grown = [sweeps.regions[k] for k in sweeps.grown]
    expected = {sweeps.regions[k] for k in sweeps.stepped} | set(grown)
    others = sum(len(c) for region, c in changes.items() if region not in expected)
    return (f"change points in {len(changes)} series: the +20 % at sweep #{step} found in {len(hits)} of "
            f"{len(sweeps.stepped)} call paths (x{min(hits, default=0):.3f}-x{max(hits, default=0):.3f}); the n^2 at "
            f"#{grow}: a change point in {sum(any(i == '#' + grow for i, *_ in changes.get(g, [])) for g in grown)} of "
            f"{len(grown)}, a class change in {sum(grow in classes.get(g, []) for g in grown)}; other change points: "
            f"{others} in the {len(changes) - len(expected & set(changes))} series without a step")


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def top(stats: pstats.Stats, out: Path, lines: int = 16) -> str:
    """The profile's top entries by cumulative time (all of them in ``out``), the first ``lines`` below the
    command's own entry point returned, with the time spent importing modules."""
    buf = io.StringIO()
    stats.stream = buf
    stats.sort_stats("cumulative").print_stats(80)
    stats.sort_stats("tottime").print_stats(40)
    out.write_text(buf.getvalue())
    imports = max((v[3] for (file, _, name), v in stats.stats.items() if name == "_find_and_load"), default=0.0)
    total = max(v[3] for v in stats.stats.values())
    buf = io.StringIO()
    stats.stream = buf
    stats.sort_stats("cumulative").print_stats(lines + 30)
    text = buf.getvalue()
    head, _, body = text.partition("   ncalls")
    kept = [line for line in body.splitlines()[1:] if line.strip() and not any(
        x in line for x in ("<frozen", "{built-in method builtins.exec}", "<string>:1", "cli/__main__.py",
                            "cli/__init__.py:61(main)"))][:lines]
    said = [f"    {total:.2f} s in all, {imports:.2f} s of it importing modules; by cumulative time:",
            "       ncalls  tottime  percall  cumtime  percall filename:lineno(function)"]
    return "\n".join(said + ["    " + line.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "")
                             for line in kept])


def profile_cli(name: str, args: list[str], out: Path) -> None:
    """The command once more under cProfile (a new process, as timed)."""
    prof = out / f"profile-{name}.prof"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "perfsweep.cli", *args],
                          capture_output=True, text=True)
    took = time.perf_counter() - start
    if not prof.exists():
        print(f"  profile of {name}: failed (exit {proc.returncode}): {proc.stderr[-500:]}")
        return
    stats = pstats.Stats(str(prof))
    print(f"  profile of {name} ({took:.2f} s wall under cProfile; {out.name}/profile-{name}.txt):")
    print(top(stats, out / f"profile-{name}.txt"))
    prof.unlink()


def counts(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return ", ".join(f"{db.execute(f'SELECT count(*) FROM {t}').fetchone()[0]:,} {t}"
                         for t in ("sweeps", "sweep_runs", "studies", "entries", "verdicts"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweeps", type=int, default=1000, help="sweeps recorded before the commands are timed")
    ap.add_argument("--paths", type=int, default=100, help="call paths per sweep (one study)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each timed command (medians printed)")
    ap.add_argument("--resamples", type=int, default=40, help="resampled models per call path (as compare_scale.py)")
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--out", type=Path, default=None,
                    help="where output.txt and profiles go (default bench/results/history_scale/<commit>-quiet)")
    ap.add_argument("--keep", type=Path, default=None, help="build the store and trees in this directory and keep them")
    ap.add_argument("--trend-limit", type=float, default=120,
                    help="seconds after which a history trend run is stopped and reported as longer (default 120: "
                         "12x its target; the in-process parts estimate the whole)")
    ap.add_argument("--profile", choices=["missed", "all", "none"], default="missed",
                    help="run a command once more under cProfile where its target is missed (default), always or never")
    args = ap.parse_args()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    out = args.out or ROOT / "bench" / "results" / "history_scale" / f"{commit}-quiet"
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "output.txt", "w")
    sys.stdout = Tee(sys.__stdout__, log)
    began = time.perf_counter()
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}: bench/history_scale.py --sweeps {args.sweeps} --paths {args.paths} "
          f"--repeats {args.repeats} --resamples {args.resamples} --seed {args.seed}; commit {commit} "
          f"({measured_commit()}); {os.cpu_count()} cores, load average {load()} at the start", flush=True)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        if any(args.keep.iterdir()):
            print(f"--keep {args.keep}: not empty", file=sys.stderr)
            return 2
        work, cleanup = args.keep, None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="history-scale-")
        work = Path(cleanup.name)
    try:
        return run(args, work, out)
    finally:
        print(f"# load average {load()} at the end; whole run {time.perf_counter() - began:.0f} s", flush=True)
        sys.stdout = sys.__stdout__
        log.close()
        if cleanup:
            cleanup.cleanup()


def run(args, work: Path, out: Path) -> int:
    from perfsweep.history.record import record
    from perfsweep.history.store import open_store
    from perfsweep.history.sweep import read_tree
    from perfsweep.history.trends import render_table, write_html

    store_path = work / "history.sqlite"
    n = args.sweeps
    t = time.perf_counter()
    sweeps = Sweeps(base_models(args.resamples, seed=args.seed), args.paths, args.seed, args.sweeps)
    fitted = time.perf_counter() - t

    def tree(i: int) -> Path:
        return work / f"sweep-{i:04d}"

    # --- filling ---------------------------------------------------------------------------------------------
    store = open_store(str(store_path))
    scratch = work / "scratch"
    took = {"write": [], "read_tree": [], "record": []}
    t_fill = time.perf_counter()
    for i in range(1, n + 1):
        root = tree(i) if i > n - 3 else scratch
        t0 = time.perf_counter()
        sweeps.write(root, i)
        t1 = time.perf_counter()
        data = read_tree(root)
        t2 = time.perf_counter()
        sweep_id, new = record(store, data, {"branch": "main"}, f"v{i}")
        t3 = time.perf_counter()
        assert new and sweep_id == i, (i, sweep_id)  # sweep i is #i (the trend's change points name them so)
        took["write"].append(t1 - t0)
        took["read_tree"].append(t2 - t1)
        took["record"].append(t3 - t2)
        if i % 100 == 0:
            print(f"  filled {i} of {n} sweeps, {time.perf_counter() - t_fill:.0f} s, load average {os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)
    fill = time.perf_counter() - t_fill
    store.close()
    shutil.rmtree(scratch, ignore_errors=True)
    size = store_path.stat().st_size
    models_size = (tree(n) / "models" / STUDY / "models.json").stat().st_size
    first, last = took["record"][:100], took["record"][-100:]
    print(f"filled the store with {n} sweeps of {args.paths} call paths ({STUDY}, {args.resamples} resamples, 60 run "
          f"records a sweep; models.json {models_size / 1e6:.2f} MB a sweep) in {fill:.0f} s "
          f"(base models fitted once: {fitted:.1f} s):")
    print(f"  per sweep, median: writing the tree {median(took['write']):.3f} s, read_tree {median(took['read_tree']):.3f} s, "
          f"record() {median(took['record']):.3f} s (sweeps 1-{len(first)}: {median(first):.3f} s; "
          f"the last {len(last)}: {median(last):.3f} s)")
    print(f"  sums: writing {sum(took['write']):.0f} s, read_tree {sum(took['read_tree']):.0f} s, record() "
          f"{sum(took['record']):.0f} s")
    print(f"  store {store_path.name}: {size / 1e6:.1f} MB ({size / n / 1e3:.0f} kB a sweep); {counts(store_path)}",
          flush=True)

    # --- compare NEW --history 3 against compare B1 B2 B3 NEW --------------------------------------------------
    new_tree = tree(n + 1)
    sweeps.write(new_tree, n + 1)
    bases = [tree(i) for i in range(n - 2, n + 1)]
    predict = [PERFSWEEP, "predict", str(new_tree / "models" / STUDY / "models.json"), "n=1000", "p=4",
               "--region", sweeps.regions[0]]
    by_hand = [PERFSWEEP, "compare", *map(str, bases), str(new_tree), "--format", "json"]
    from_store = [PERFSWEEP, "compare", str(new_tree), "--history", "3", "--store", str(store_path), "--format", "json"]
    times = {"predict": [], "hand": [], "store": [], "trend": [], "add": []}
    same, said = True, ""
    for r in range(args.repeats):
        base, proc = timed(predict)
        assert proc.returncode == 0, proc.stderr
        a, pa = timed(by_hand)
        assert pa.returncode in (0, 1), pa.stderr
        b, pb = timed(from_store)
        assert pb.returncode in (0, 1), pb.stderr
        da, db = json.loads(pa.stdout), json.loads(pb.stdout)
        same = same and da["rows"] == db["rows"] and pa.returncode == pb.returncode
        said = pb.stderr.strip().splitlines()[0]
        times["predict"].append(base)
        times["hand"].append(a)
        times["store"].append(b)
        print(f"  round {r + 1}: predict {base:5.2f} s   compare B1 B2 B3 NEW {a:5.2f} s   compare NEW --history 3 "
              f"{b:5.2f} s ({b / a:.2f}x), load average {os.getloadavg()[0]:.1f}", flush=True)
    base = median(times["predict"])
    hand, hist = median(times["hand"]), median(times["store"])
    ratio = hist / hand
    print(f"compare, median of {args.repeats} rounds (each command a new process; {len(da['rows'])} rows, exit "
          f"{pa.returncode}):")
    print(f"  baseline perfsweep predict (1 model):       {base:6.2f} s")
    print(f"  perfsweep compare B1 B2 B3 NEW (4 trees):   {hand:6.2f} s ({spread(times['hand'])})   "
          f"{hand / base:.1f}x predict")
    print(f"  perfsweep compare NEW --history 3 --store:  {hist:6.2f} s ({spread(times['store'])})   "
          f"{hist / base:.1f}x predict")
    print(f"  --history 3 / directories = {ratio:.2f}x   target <= {TARGETS['ratio']}x: {verdict(ratio, TARGETS['ratio'])}")
    print(f"  the same rows and exit code from the store as from the directories: {'yes' if same else 'NO'}")
    print(f"  {said}", flush=True)

    # --- the trend page ----------------------------------------------------------------------------------------
    page = work / "trends.html"
    trend = [PERFSWEEP, "history", "trend", "--store", str(store_path), "--study", STUDY, "--html", str(page)]
    stdout = ""
    for r in range(args.repeats):
        took_t, proc = timed_limit(trend, args.trend_limit)
        if proc is None:
            print(f"  round {r + 1}: history trend --html stopped after {took_t:.0f} s (--trend-limit)", flush=True)
            times["trend"].append(took_t)
            break
        assert proc.returncode == 0, proc.stderr
        stdout = proc.stdout
        times["trend"].append(took_t)
        print(f"  round {r + 1}: history trend --html {took_t:6.2f} s, load average {os.getloadavg()[0]:.1f}", flush=True)
        if took_t > 3 * TARGETS["trend"] and r + 1 < args.repeats:
            print("  (no more rounds: the first took more than 3x its target)", flush=True)
            break
    trend_s = median(times["trend"])
    if not stdout:  # stopped: longer than that
        print(f"history trend --study {STUDY} --html PAGE: more than {trend_s:.0f} s (stopped; "
              f"{trend_s / base:.0f}x predict)   target <= {TARGETS['trend']:.0f} s: "
              f"{'MISSED' if trend_s > TARGETS['trend'] else 'not measured (--trend-limit below it)'}")
    else:
        print(f"history trend --study {STUDY} --html PAGE, median of {len(times['trend'])}: {trend_s:.2f} s "
              f"({spread(times['trend'])}; {trend_s / base:.1f}x predict)   target <= {TARGETS['trend']:.0f} s: "
              f"{verdict(trend_s, TARGETS['trend'])}")
    if stdout:
        print(f"  page {page.stat().st_size / 1e6:.2f} MB, its text table on stdout {len(stdout) / 1e6:.2f} MB "
              f"({stdout.count(chr(10)):,} lines)")
        print("  " + found_changes(stdout, sweeps), flush=True)
    # where its time goes, in-process: the query and series without their change points, the change points of
    # a few series (each series has its own), the text table and the page
    importlib.import_module("ruptures")  # (its import is timed with the CLI's, not with the first series)

    from perfsweep.history import trends as tr

    store = open_store(str(store_path))
    t0 = time.perf_counter()
    with mock.patch.object(tr, "change_points", lambda *a: []):
        table = tr.trends(store, study=STUDY)
    t1 = time.perf_counter()
    render_table(table, "text")
    t2 = time.perf_counter()
    write_html(table, work / "again.html", store_name=store.name)
    t3 = time.perf_counter()
    store.close()
    by_region = {s["region"]: s for s in table["series"]}
    kinds = {"+20 % step": sweeps.stepped, "n^2 class change": sweeps.grown,
             "no step": [k for k in range(sweeps.paths) if k not in sweeps.stepped + sweeps.grown]}
    estimate, said, series_of = 0.0, [], {}
    for kind, members in kinds.items():
        took_k, found_k = [], []
        for k in members[:2]:
            pts = by_region[sweeps.regions[k]]["points"]
            series_of[kind] = ([p["prediction"] for p in pts], [p["low"] for p in pts], [p["high"] for p in pts])
            t = time.perf_counter()
            at = tr.change_points(*series_of[kind])
            took_k.append(time.perf_counter() - t)
            found_k.append("/".join(f"#{pts[i]['sweep']}" for i in at) or "none")
        if took_k:
            estimate += median(took_k) * len(members)
            said.append(f"{kind} ({len(members)} series): {', '.join(f'{x:.2f}' for x in took_k)} s, changes at "
                        f"{', '.join(found_k)}")
    points = len(table["series"][0]["points"]) if table["series"] else 0
    print(f"  in-process: the query and {len(table['series'])} series without change points {t1 - t0:.2f} s; "
          f"render_table(text) {t2 - t1:.2f} s; write_html {t3 - t2:.2f} s; change_points() of series of {points} "
          f"sweeps, 2 of each kind: {'; '.join(said)}; so {estimate:.0f} s for the {len(table['series'])} series")
    if args.profile == "all" or (args.profile == "missed" and trend_s > TARGETS["trend"]):
        prof = cProfile.Profile()
        prof.runcall(tr.change_points, *series_of["no step" if "no step" in series_of else next(iter(series_of))])
        print(f"  profile of change_points() of one series of {points} sweeps without a step, in-process "
              "(profile-trend.txt):")
        print(top(pstats.Stats(prof), out / "profile-trend.txt"))
    print(flush=True)

    # --- recording one more sweep ------------------------------------------------------------------------------
    extra = [tree(n + 1)] + [tree(n + 1 + k) for k in range(1, 2 * args.repeats)]
    for k, root in enumerate(extra[1:], 2):
        sweeps.write(root, n + k)
    for r in range(args.repeats):
        took_a, proc = timed([PERFSWEEP, "history", "add", str(extra[r]), "--store", str(store_path),
                              "--label", "branch=main", "--app-version", f"v{n + 1 + r}"])
        assert proc.returncode == 0 and "recorded as sweep" in proc.stdout, proc.stdout + proc.stderr
        times["add"].append(took_a)
        print(f"  round {r + 1}: history add (sweep #{n + 1 + r}) {took_a:5.2f} s, load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    store = open_store(str(store_path))
    inproc = {"read_tree": [], "record": []}
    for r in range(args.repeats):
        t0 = time.perf_counter()
        data = read_tree(extra[args.repeats + r])
        t1 = time.perf_counter()
        _, new = record(store, data, {"branch": "main"}, f"v{n + 1 + args.repeats + r}")
        t2 = time.perf_counter()
        assert new
        inproc["read_tree"].append(t1 - t0)
        inproc["record"].append(t2 - t1)
    store.close()
    add_s, rec_s = median(times["add"]), median(inproc["record"])
    print(f"recording one more sweep into the store of {n} (then {n + 1}, ...), median of {args.repeats}:")
    print(f"  perfsweep history add RESULTS: {add_s:5.2f} s ({spread(times['add'])}; {add_s / base:.1f}x predict)   "
          f"target <= {TARGETS['add']:.0f} s: {verdict(add_s, TARGETS['add'])}")
    print(f"  in-process: read_tree {median(inproc['read_tree']):.3f} s, record() {rec_s:.3f} s "
          f"({spread(inproc['record'])})   target <= {TARGETS['record']:.0f} s: {verdict(rec_s, TARGETS['record'])}")
    size2 = store_path.stat().st_size
    print(f"  store at the end: {size2 / 1e6:.1f} MB; {counts(store_path)}", flush=True)

    # --- profiles of what missed its target -----------------------------------------------------------------------
    missed = {"compare_history": ratio > TARGETS["ratio"], "trend": trend_s > TARGETS["trend"],
              "add": add_s > TARGETS["add"]}
    if args.profile != "none":
        for name, miss in missed.items():
            if not (miss or args.profile == "all"):
                continue
            if name == "compare_history":
                profile_cli(name, from_store[1:], out)
            elif name == "trend":
                continue  # profiled above: the change points of one series (a CLI run under cProfile takes minutes)
            else:
                root = tree(n + 1 + 2 * args.repeats)
                sweeps.write(root, n + 1 + 2 * args.repeats)
                profile_cli(name, ["history", "add", str(root), "--store", str(store_path)], out)
        if rec_s > TARGETS["record"] or args.profile == "all":
            root = tree(n + 2 + 2 * args.repeats)
            sweeps.write(root, n + 2 + 2 * args.repeats)
            store = open_store(str(store_path))
            data = read_tree(root)
            prof = cProfile.Profile()
            prof.runcall(record, store, data)
            store.close()
            print("  profile of record() in-process (profile-record.txt):")
            print(top(pstats.Stats(prof), out / "profile-record.txt"))
    met = sum(not m for m in missed.values()) + (rec_s <= TARGETS["record"])
    print(f"targets met: {met} of 4 (add {add_s:.2f} s, record() {rec_s:.3f} s, trend {'' if stdout else 'more than '}"
          f"{trend_s:.2f} s, "
          f"--history / directories {ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
