"""The chaos run of packs (config ``bundle: packs``): a local sweep of about 500 short runs, started again
and again while processes of it are SIGKILLed at random, 50 times or more; then the sweep is let finish
and its results tree is checked: no run measured twice, no file left over, every lost attempt archived,
the models built.

    .venv/bin/python bench/chaos_packs.py [--runs 500] [--k 10] [--pack-runs 25] [--kills 50] [--seed 57]
                                          [--sleep 0.2] [--max-delay 3] [--budget 720] [--keep DIR] [--out FILE]

The sweep: tests/apps/fault_app.py (as tests/sweeps/tiny.py's fault_config runs it) over ``--runs / --k``
healthy values of n (1, 2, 4, 6, 8, 9, 10, 12, ...: none of the n fault_app misbehaves on, 3 5 7 11 13 17
19 29 31), k = ``--k`` repetitions, each run ``--sleep`` s, ``retries: 1``, ``bundle: packs`` with
``pack: {runs: --pack-runs}``: 10 rounds of 50 runs, 2 packs a round. Each start is
``perfsweep run c.yaml --cores 2 --no-report -- results/models/faults/models.csv`` in its own session.
While it lives, again and again: a delay drawn from a seeded RNG (uniform, 0.2 s to ``--max-delay``), then
SIGKILL to a target drawn from the same RNG:

- ``runner``: the pack's runner (the ``python -m perfsweep.runner --pack ...`` process, not its shell);
- ``app``: the run's fault_app process (the runner then records a failed attempt: killed by signal 9);
- ``group``: the start's whole process group (perfsweep, Snakemake, the job's shell and runner; not the app,
  which the runner starts in its own session);
- ``snakemake``: Snakemake alone (its runner goes on, orphaned, and the next start waits on its locks).

A target that does not appear within 8 s (no pack running: Snakemake parsing, or post-processing) is
replaced by Snakemake or the group (drawn too). A start whose Snakemake died ends; the next start goes
on. Once ``--kills`` kills are done (or ``--budget`` s passed) the starts go on without kills until one
exits 0 (a start that exits 0 earlier ends the run: the sweep is complete); then one more start, which
should find nothing to do (settled: no record set aside, no pack run, no attempt archived).

Then printed: the kills by target (and the runs in flight in the runners killed: a non-empty lock file
``.rep<k>.json.lock``, which pack_run keeps while a run is measured, whose flock that runner held, from
/proc/locks); runs measured twice (more than one archived attempt with status ok, or an ok record that a
later start replaced), an attempt number archived twice, an archived ok attempt without an ok record
(a measurement dropped); leftover files (``*.tmp`` under results, outside the quarantine where a start sets aside what
a killed write left in runs/ and archive/; non-empty lock files: attempts left in flight; processes of
the sweep still alive); the final records per status; the archived attempts per status and the lost ones
(``lost: true``: an attempt a later start found in flight); each failed run with its attempts (with
retries 1 a run has 2 attempts, and a lost one spends one: perfsweep.sweep.pack_run.spent); whether the
models file exists. The output (this stdout) also goes to ``--out`` (bench/results/chaos_packs.txt).
The kills are seeded, their effect is not: they land where the host's timing puts the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml
from tee import Tee  # bench/tee.py

REPO = Path(__file__).resolve().parents[1]
PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))
FAULT_APP = REPO / "tests" / "apps" / "fault_app.py"
FAULTY = {3, 5, 7, 11, 13, 17, 19, 29, 31}  # fault_app's docstring: the n it misbehaves on
TARGETS = ("runner", "app", "group", "snakemake")
STUDY = "faults"
MODELS = f"results/models/{STUDY}/models.csv"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def healthy(count: int) -> list[int]:
    out, n = [], 1
    while len(out) < count:
        if n not in FAULTY:
            out.append(n)
        n += 1
    return out


def config(work: Path, args: argparse.Namespace) -> dict:
    state = work / "state"
    return {"seed": args.seed,
            "app": {"command": f"{sys.executable} {FAULT_APP} {{n}} {state} {args.sleep}",
                    "time_pattern": r"^time: (\S+)"},
            "parameters": {"n": 1},
            "studies": {STUDY: {"vary": {"n": healthy(args.runs // args.k)}}},
            "repetitions": args.k, "retries": 1, "timeout": 10,
            "bundle": "packs", "pack": {"runs": args.pack_runs, "seconds_per_run": 1},
            "results": "results"}


def processes(work: Path, state: Path) -> dict[str, list[int]]:
    """The sweep's processes now, by kind: the pack runners (python, not their shell), the apps, the main
    Snakemake (newest first)."""
    found: dict[str, list[tuple[float, int]]] = {"runner": [], "app": [], "snakemake": []}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
            if not args:
                continue
            if str(FAULT_APP) in args and str(state) in args:
                kind = "app"
            elif "perfsweep.runner" in args and "--pack" in args and args[args.index("perfsweep.runner") - 1] == "-m":
                kind = "runner"
            elif args[1:3] == ["-m", "snakemake"]:
                kind = "snakemake"
            else:
                continue
            if kind != "app" and os.readlink(f"/proc/{pid}/cwd") != str(work):
                continue
            with open(f"/proc/{pid}/stat") as fh:
                started = float(fh.read().rsplit(")", 1)[1].split()[19])
            found[kind].append((started, pid))
        except (OSError, ValueError, IndexError):
            continue
    return {k: [pid for _, pid in sorted(v, reverse=True)] for k, v in found.items()}


def in_flight(results: Path, pids: set[int] | None = None) -> list[str]:
    """Runs whose lock file holds an attempt (pack_run writes it as the run starts, empties it after),
    and whose flock is held by one of ``pids`` (/proc/locks; None: by anyone): the runs those runners
    measure now. (A runner waits on the lock of a run another runner measures: an orphan of a killed
    Snakemake.)"""
    held: dict[int, int] = {}  # inode -> pid holding its flock
    try:
        for line in Path("/proc/locks").read_text().splitlines():
            f = line.split()
            if len(f) >= 6 and f[1] == "FLOCK":  # (a waiter's line has "->" in f[1])
                held[int(f[5].rsplit(":", 1)[1])] = int(f[4])
    except (OSError, ValueError, IndexError):
        pass
    out = []
    for lock in (results / "runs").rglob(".rep*.json.lock"):
        try:
            st = lock.stat()
        except OSError:
            continue
        if st.st_size and (pids is None or held.get(st.st_ino) in pids):
            out.append(f"{lock.parent.relative_to(results / 'runs').as_posix()}/{lock.name[1:-len('.json.lock')]}")
    return sorted(out)


def parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def group_of(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


def records(results: Path) -> dict[str, dict]:
    """run id -> its record (damaged or unreadable: {"status": "unreadable"})."""
    out = {}
    for path in (results / "runs").rglob("rep*.json"):
        run_id = path.relative_to(results / "runs").as_posix()[:-len(".json")]
        try:
            out[run_id] = json.loads(path.read_text())
        except (OSError, ValueError):
            out[run_id] = {"status": "unreadable"}
    return out


def archived(results: Path) -> dict[str, list[tuple[str, dict]]]:
    """run id -> [(file name, attempt record)], oldest first."""
    out: dict[str, list[tuple[str, dict]]] = {}
    for path in (results / "archive").rglob("rep*.attempt*.json"):
        rep = path.name.split(".", 1)[0]
        run_id = f"{path.parent.relative_to(results / 'archive').as_posix()}/{rep}"
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            rec = {"status": "unreadable"}
        out.setdefault(run_id, []).append((path.name, rec))
    for attempts in out.values():
        attempts.sort(key=lambda t: t[0].split(".", 2)[2])
    return out


def is_final(a: dict) -> bool:
    """The failure record a pack's start writes (and archives) for a run whose attempts are spent
    (pack_run.final_record): not an attempt of its own."""
    return a.get("status") == "failed" and "its attempts spent" in (a.get("recorded_by") or "")


def is_lost(a: dict) -> bool:
    """An attempt a later start found in flight and archived (pack_run.archive_lost)."""
    return a.get("status") == "killed" and bool(a.get("lost"))


def number(name: str) -> int:
    """The attempt number in an archived copy's file name (rep<k>.attempt<a>.<stamp>.json)."""
    return int(name.split(".")[1][len("attempt"):])


def story(attempts: list[tuple[str, dict]]) -> str:
    said = []
    for name, a in attempts:
        what = a.get("status")
        if is_lost(a):
            what = "lost (its runner was killed)"
        elif is_final(a):
            what = "the final failure record (attempts spent)"
        elif what == "failed":
            what = f"failed: {(a.get('error') or '')[:60]}"
        said.append(f"attempt{number(name)} {what}")
    return "; ".join(said)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=500, help="runs of the sweep (--runs / --k values of n)")
    ap.add_argument("--k", type=int, default=10, help="repetitions")
    ap.add_argument("--pack-runs", type=int, default=25, help="the config's pack: runs")
    ap.add_argument("--kills", type=int, default=50, help="SIGKILLs before the sweep is let finish")
    ap.add_argument("--seed", type=int, default=57, help="the kills' RNG and the config's seed")
    ap.add_argument("--sleep", type=float, default=0.2, help="seconds each run of fault_app takes")
    ap.add_argument("--max-delay", type=float, default=3.0, help="longest delay before a kill (s)")
    ap.add_argument("--budget", type=float, default=720.0, help="seconds of starts with kills at most")
    ap.add_argument("--keep", type=Path, default=None, help="run the sweep in this (empty) directory and keep it")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "chaos_packs.txt",
                    help="a copy of the output (default bench/results/chaos_packs.txt)")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = open(args.out, "w")
    sys.stdout = Tee(sys.__stdout__, log)
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "workflow", "Snakefile")
    began = time.perf_counter()
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}: bench/chaos_packs.py --runs {args.runs} --k {args.k} "
          f"--pack-runs {args.pack_runs} --kills {args.kills} --seed {args.seed} --sleep {args.sleep} --max-delay "
          f"{args.max_delay}; commit {git('rev-parse', '--short', 'HEAD') or 'unknown'}"
          f"{' with uncommitted changes in ' + ', '.join(l.split()[-1] for l in dirty.splitlines()) if dirty else ''}; "
          f"{os.cpu_count()} cores, load average {load()} at the start", flush=True)
    try:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            if any(args.keep.iterdir()):
                print(f"--keep {args.keep}: not empty", file=sys.stderr)
                return 2
            return run(args, args.keep.resolve())
        with tempfile.TemporaryDirectory(prefix="perfsweep-chaos-", dir="/tmp") as tmp:
            return run(args, Path(tmp).resolve())
    finally:
        print(f"# load average {load()} at the end; whole run {time.perf_counter() - began:.0f} s", flush=True)
        sys.stdout = sys.__stdout__
        log.close()


def run(args: argparse.Namespace, work: Path) -> int:
    state, results = work / "state", work / "results"
    state.mkdir()
    cfg = config(work, args)
    (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    ns = cfg["studies"][STUDY]["vary"]["n"]
    total = len(ns) * args.k
    print(f"sweep: fault_app over {len(ns)} values of n ({ns[0]}..{ns[-1]}) x k = {args.k}: {total} runs of "
          f"{args.sleep} s, retries 1, bundle: packs (pack: runs {args.pack_runs}); in {work}")
    cmd = [PERFSWEEP, "run", "c.yaml", "--cores", "2", "--no-report", "--", MODELS]
    rng = random.Random(args.seed)
    kills: list[dict] = []
    starts: list[dict] = []
    replaced: list[str] = []
    seen_ok: dict[str, str] = {}  # run id -> started_at of its ok record
    chaos_until = time.monotonic() + args.budget
    calm_tries = 0
    t0 = time.monotonic()
    while True:
        chaos = len(kills) < args.kills and time.monotonic() < chaos_until
        with open(work / f"start{len(starts) + 1:03d}.log", "w") as out:
            proc = subprocess.Popen(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        began, done_here = time.monotonic(), []
        while chaos and proc.poll() is None and len(kills) < args.kills and time.monotonic() < chaos_until:
            delay = rng.uniform(0.2, args.max_delay)
            target, fallback = rng.choice(TARGETS), rng.choice(("snakemake", "group"))
            end = time.monotonic() + delay
            while time.monotonic() < end and proc.poll() is None:
                time.sleep(0.02)
            if proc.poll() is not None:
                break
            kill = _kill(target, fallback, proc, work, state, results)
            if kill is None:
                break
            kill.update(start=len(starts) + 1, at=round(time.monotonic() - t0, 1))
            kills.append(kill)
            done_here.append(kill["target"])
            if kill["target"] in ("group", "snakemake"):
                break
        rc = proc.wait()
        starts.append({"rc": rc, "seconds": time.monotonic() - began, "kills": done_here})
        # an ok record a later start replaced (or took away): a run measured twice
        now = records(results)
        for run_id, stamp in seen_ok.items():
            rec = now.get(run_id)
            if rec is None or rec.get("started_at") != stamp:
                replaced.append(f"{run_id}: {stamp} -> {rec.get('started_at') if rec else 'gone'}")
        seen_ok = {run_id: rec.get("started_at") for run_id, rec in now.items() if rec.get("status") == "ok"}
        print(f"  start {len(starts):3d}: exit {rc:4d} after {starts[-1]['seconds']:5.1f} s, kills {', '.join(done_here) or '-'}; "
              f"{len(now)} of {total} records, {len(kills)} kills so far", flush=True)
        if rc == 0:  # the sweep is complete
            break
        if not chaos:
            calm_tries += 1
            if calm_tries >= 3:
                print("the sweep did not complete in 3 starts without kills")
                break
    settle = time.monotonic() + 30
    while any(processes(work, state).values()) and time.monotonic() < settle:
        time.sleep(0.2)
    # a complete sweep is settled: one more start measures nothing, sets nothing aside
    archive_before = sum(1 for _ in (results / "archive").rglob("*.json"))
    again = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    out = again.stdout + again.stderr
    (work / "again.log").write_text(out)
    again_said = {"rc": again.returncode, "nothing": "Nothing to be done" in out,
                  "set_aside": [line for line in out.splitlines() if "moved under" in line or "run again" in line],
                  "archived": sum(1 for _ in (results / "archive").rglob("*.json")) - archive_before}
    report(args, work, results, total, kills, starts, replaced, again_said)
    return 0


def _kill(target: str, fallback: str, proc: subprocess.Popen, work: Path, state: Path, results: Path) -> dict | None:
    """SIGKILL ``target`` (within 8 s, else ``fallback``); what was killed, and the runs in flight in the
    runners it killed (for the app: in its runner)."""
    end = time.monotonic() + 8.0
    chosen = target
    while proc.poll() is None:
        found = processes(work, state)
        if target == "group":
            mine = {pid for pid in found["runner"] if group_of(pid) == proc.pid}
            flying = in_flight(results, mine)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                return None
            return {"target": "group", "drawn": chosen, "in_flight": flying, "runners": len(mine)}
        pids = found[target]
        if pids:
            pid = pids[0]
            flying = in_flight(results, {parent(pid) if target == "app" else pid})
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue  # it ended meanwhile: look again
            return {"target": target, "drawn": chosen, "in_flight": flying,
                    "runners": int(target == "runner"), "orphan": target == "runner" and group_of(pid) != proc.pid}
        if time.monotonic() > end:
            target = fallback
            continue
        time.sleep(0.01)
    return None


def report(args, work: Path, results: Path, total: int, kills: list[dict], starts: list[dict],
           replaced: list[str], again: dict) -> None:
    recs, att = records(results), archived(results)
    left = {k: v for k, v in processes(work, work / "state").items() if v}
    print(f"\n{len(starts)} starts ({sum(1 for s in starts if s['kills'])} with kills; exit codes "
          f"{dict(sorted(Counter(s['rc'] for s in starts).items()))}), {sum(s['seconds'] for s in starts):.0f} s in all")
    by = Counter(k["target"] for k in kills)
    swapped = sum(1 for k in kills if k["target"] != k["drawn"])
    print(f"kills: {len(kills)} (target >= {args.kills}): " + ", ".join(f"{t} {by[t]}" for t in TARGETS)
          + f"; {swapped} drawn as runner or app found none within 8 s and took Snakemake or the group instead")
    if len(kills) < args.kills:
        print(f"  the sweep completed after {len(kills)} kills, fewer than --kills {args.kills}")
    flown = Counter(r for k in kills if k["target"] in ("runner", "group") for r in k["in_flight"])
    print(f"  runs in flight in the runners killed (runner or group; their lock files held the attempt): "
          f"{sum(flown.values())} in {sum(1 for k in kills if k['target'] in ('runner', 'group') and k['in_flight'])} "
          f"kills; runners killed: {sum(k.get('runners', 0) for k in kills)} ({sum(1 for k in kills if k.get('orphan'))} "
          f"of them orphans of a killed Snakemake); app kills: {by['app']}; Snakemake alone (its runner went on): "
          f"{by['snakemake']}")

    ok_twice = {r: [a for _, a in v if a.get("status") == "ok"] for r, v in att.items()}
    ok_twice = {r: v for r, v in ok_twice.items() if len(v) > 1}
    # an attempt archived twice under one number: a later start archived as lost an attempt whose own
    # copy (ok or failed) the killed runner had written already
    twice = {r: [n for n, c in Counter(number(name) for name, a in v if not is_final(a)).items() if c > 1]
             for r, v in att.items()}
    twice = {r: v for r, v in twice.items() if v}
    # an ok attempt in the archive, but no ok record: a measurement the sweep dropped
    dropped = {r: v for r, v in att.items() if any(a.get("status") == "ok" for _, a in v)
               and (recs.get(r) or {}).get("status") != "ok"}
    print(f"runs measured twice: {len(ok_twice)} with more than one archived ok attempt, {len(replaced)} ok records "
          f"replaced by a later start; runs with an attempt archived twice under one number: {len(twice)}; runs with "
          f"an archived ok attempt but no ok record: {len(dropped)}")
    for r in list(ok_twice)[:10]:
        print(f"  measured twice: {r}: {story(att[r])}")
    for line in replaced[:10]:
        print(f"  replaced: {line}")
    for r, v in list(twice.items())[:10]:
        print(f"  attempt {', '.join(map(str, v))} archived twice: {r}: {story(att[r])}")
    for r in list(dropped)[:10]:
        print(f"  ok attempt dropped: {r}: record {(recs.get(r) or {}).get('status')}; {story(att[r])}")

    tmps = [p for p in results.rglob("*.tmp") if "quarantine" not in p.relative_to(results).parts]
    quarantined = [p for p in results.rglob("*") if p.is_file() and "quarantine" in p.relative_to(results).parts]
    locks = [p for p in (results / "runs").rglob(".rep*.json.lock") if p.stat().st_size]
    superseded = [p for p in results.rglob("*") if p.is_file() and "superseded" in p.relative_to(results).parts]
    print(f"leftover files: {len(tmps)} *.tmp under results (outside the quarantine), {len(locks)} non-empty lock "
          f"files (attempts left in flight); processes of the sweep still alive: "
          f"{', '.join(f'{k} {len(v)}' for k, v in left.items()) or 'none'}")
    for p in tmps[:10]:
        print(f"  {p.relative_to(work)}")
    for p in locks[:10]:
        print(f"  {p.relative_to(work)}: {p.read_text()[:150]}")
    print(f"  set aside by a later start: {len(quarantined)} files under results/quarantine "
          f"({', '.join(sorted({p.name for p in quarantined})[:6]) or '-'}), {len(superseded)} under results/superseded")

    status = Counter(r.get("status") for r in recs.values())
    print(f"records: {len(recs)} of {total}: " + ", ".join(f"{s} {c}" for s, c in status.most_common()))
    astatus = Counter("lost" if is_lost(a) else "final failure records" if is_final(a) else a.get("status")
                      for v in att.values() for _, a in v)
    print(f"archived attempts: {sum(astatus.values())}: " + ", ".join(f"{s} {c}" for s, c in astatus.most_common()))
    lost = [a for v in att.values() for _, a in v if is_lost(a)]
    whys = Counter(re.sub(r"^attempt \S+ ", "", a.get("error") or "") for a in lost)
    lost_runs = Counter(a.get("run_id") for a in lost)
    print(f"lost attempts archived (lost: true): {len(lost)}, against {sum(flown.values())} runs in flight in the runners "
          f"killed; runs killed in flight but no lost attempt: {sorted((flown - lost_runs).elements()) or 'none'}; lost "
          f"attempts without such a kill: {sorted((lost_runs - flown).elements()) or 'none'}"
          + "".join(f"\n  {c} x {w}" for w, c in whys.most_common()))
    failed = {r: rec for r, rec in recs.items() if rec.get("status") != "ok"}
    print(f"runs that ended without an ok record: {len(failed)} (retries 1: 2 attempts a run; a lost attempt "
          "spends one, pack_run.spent)")
    for r, rec in sorted(failed.items()):
        print(f"  {r}: {rec.get('status')}: {(rec.get('error') or '')[:110]}\n    {story(att.get(r, []))}")
    plan = json.loads((results / "packs" / "plan.json").read_text())["packs"]
    wrong = [run for pid, members in plan.items() for i, run in enumerate(members)
             if (recs.get(run) or {}).get("pack") not in ({"id": pid, "index": i, "of": len(members)},)]
    print(f"packs: {len(plan)}; records whose pack field is not their place in plan.json: {len(wrong)}")
    models = results / "models" / STUDY / "models.csv"
    print(f"models built: {'yes' if models.exists() else 'NO'} ({models.relative_to(work)})")
    if models.exists():
        import csv

        rows = list(csv.DictReader(models.open()))
        for row in rows[:3]:
            said = {k: row[k] for k in ("region", "metric", "model", "formula", "r2", "adj_r2", "smape") if k in row}
            print(f"  {said}")
    settled = again["rc"] == 0 and again["nothing"] and not again["set_aside"] and not again["archived"]
    print(f"one more start without kills: exit {again['rc']}, nothing to be done: {'yes' if again['nothing'] else 'NO'}, "
          f"{again['archived']} new archived attempts" + "".join(f"\n  {line}" for line in again["set_aside"]))
    verdict = (settled and len(kills) >= args.kills and not ok_twice and not replaced and not twice and not dropped
               and not tmps and not locks
               and not left and models.exists() and len(recs) == total)
    print(f"{'PASS' if verdict else 'FAIL'}: {len(kills)} kills, {len(ok_twice) + len(replaced)} runs measured twice, "
          f"{len(dropped)} ok attempts dropped, {len(tmps) + len(locks)} leftover files, {len(lost)} lost attempts archived, {len(failed)} failed runs, "
          f"models {'built' if models.exists() else 'NOT built'}, {'settled' if settled else 'NOT settled'}")


if __name__ == "__main__":
    sys.exit(main())
