"""Packs (config ``bundle: packs``, issue 57): many runs in one job. The planning on its own (seeded,
in-process: which run goes in which pack, stable when runs are added), and one real local sweep whose
shape is what its test checks: a pack whose runner is SIGKILLed mid-pack, then the same command, then
one more repetition (the SLURM faults: tests/test_slurm_faults.py)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import process_state
from perfsweep import layout
from perfsweep.config import load_config
from perfsweep.sweep import packs
from perfsweep.sweep.order import run_order
from perfsweep.sweep.pack_run import spent
from perfsweep.sweep.record import check_record
from perfsweep.sweep.run import descendants
from sweeps.lane import lane_test
from sweeps.tiny import fault_config
from test_faults import archived

PERFSWEEP = Path(sys.executable).with_name("perfsweep")


def _runs(configs, k, studies=("a",)):
    return [(s, c, r) for s in studies for c in configs for r in range(k)]


def test_a_pack_holds_one_round_of_one_class_in_the_rounds_order():
    runs = _runs([f"n={n}" for n in range(10)], 3) + [("b", f"p={p}", r) for p in (1, 2) for r in range(3)]
    order = run_order(7, runs)
    classes = {run: (int(run[1][2:]), 1) if run[0] == "b" else (1, 1) for run in runs}
    planned = packs.plan(order, classes, size=4)
    assert sorted(r for p in planned.values() for r in p.runs) == sorted(runs)  # every run once
    for pid, pack in planned.items():
        assert len(pack.runs) <= 4
        assert {order[r]["round"] for r in pack.runs} == {pack.round}
        assert {classes[r] for r in pack.runs} == {(pack.processes, pack.threads)}
        positions = [order[r]["position"] for r in pack.runs]
        assert positions == sorted(positions)  # the round's seeded order
        assert pid == packs.pack_id(pack.round, pack.processes, pack.threads, int(pid.rsplit("-", 1)[1]))
    of = packs.of_runs(planned)
    for config in {(s, c) for s, c, _ in runs}:  # a configuration's 3 repetitions: 3 packs
        assert len({of[(*config, r)] for r in range(3)}) == 3
    assert packs.plan(order, classes, size=4) == planned  # the same config and seed: the same packs


def test_variants_share_a_pack_back_to_back():
    runs = [(f"s@{v}", f"n={n}", r) for v in ("before", "after") for n in range(7) for r in range(2)]
    order = run_order(3, runs)
    planned = packs.plan(order, {run: (1, 1) for run in runs}, size=3)
    for n in range(7):
        for r in range(2):
            a, b = ("s@before", f"n={n}", r), ("s@after", f"n={n}", r)
            pack = next(p for p in planned.values() if a in p.runs)
            assert b in pack.runs and abs(pack.index(a) - pack.index(b)) == 1


def test_runs_added_later_form_new_packs_and_leave_the_others():
    first = _runs([f"n={n}" for n in range(6)], 2)
    order1 = run_order(1, first)
    before = packs.plan(order1, {r: (1, 1) for r in first}, size=4)
    more = first + [("a", f"n={n}", 2) for n in range(6)] + [("a", "n=9", r) for r in range(3)]  # a round, a point
    order2 = run_order(1, more)
    after = packs.plan(order2, {r: (1, 1) for r in more}, size=4,
                       earlier={pid: list(p.runs) for pid, p in before.items()})
    for pid, pack in before.items():
        assert after[pid].runs == pack.runs  # untouched
    new = set(after) - set(before)
    assert {r for pid in new for r in after[pid].runs} == set(more) - set(first)
    # runs no longer in the sweep leave their pack; an emptied pack is gone, its id not reused
    fewer = [r for r in first if r[1] != "n=0"]
    kept = packs.plan(run_order(1, fewer), {r: (1, 1) for r in fewer}, size=4,
                      earlier={pid: list(p.runs) for pid, p in before.items()})
    assert all(set(p.runs) <= set(before[pid].runs) for pid, p in kept.items())
    assert sorted(r for p in kept.values() for r in p.runs) == sorted(fewer)


def test_pack_size_from_runs_minutes_and_seconds_per_run():
    base = {"app": {"name": "ljmd"}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
            "studies": {"a": {"vary": {"n": [100, 200]}}}, "bundle": "packs", "timeout": 60}
    size = lambda **pack: packs.PackSettings.from_sweep(load_config({**base, "pack": pack}, source="t")).size
    assert size() == 30  # 30 minutes at the timeout (60 s) each
    assert size(seconds_per_run=0.1) == 1000 and size(seconds_per_run=0.1, runs=50) == 50
    assert size(minutes=1, seconds_per_run=7) == 8


def test_spent_attempts():
    assert spent({"status": "failed"}) and spent({"status": "timeout"})
    assert not spent({"status": "killed", "error": "terminated by signal 2"})  # local Ctrl-C
    assert spent({"status": "killed", "lost": True})  # a local runner SIGKILLed (the OOM killer)
    assert not spent({"status": "killed", "lost": True, "scheduler": {"state": "NODE_FAIL"}})
    assert not spent({"status": "killed", "slurm": {"job_id": "3"}, "scheduler": {"state": "REQUEUED"}})
    assert spent({"status": "killed", "slurm": {"job_id": "3"}, "scheduler": {"state": "CANCELLED"}})
    # killed while the controller did not answer, then the same job started again: a requeue
    unknown = {"status": "killed", "slurm": {"job_id": "3"}, "scheduler": {"job_id": "3", "state": "UNKNOWN", "restarts": 0}}
    assert spent(unknown) and spent(unknown, {"job_id": "4", "restarts": 0})
    assert not spent(unknown, {"job_id": "3", "restarts": 1})


def _records(results):
    return {p.relative_to(results / "runs").as_posix(): check_record(p) for p in (results / "runs").rglob("rep*.json")}


def _kill_mid_run(pid, outputs):
    """SIGKILL the pack runner ``pid`` if it is measuring one of ``outputs``, else let it go on; whether it
    was killed. The runner is stopped (SIGSTOP) before its state is read, so that the run cannot end
    between the look and the kill: one of the outputs' lock files holds the attempt (pack_run) and the
    app, a child of the runner, still runs, so the runner has not archived the attempt."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return False
    while (state := process_state(pid)) not in ("T", "t"):
        if state in (None, "Z", "X"):  # it ended before the signal
            return False
        time.sleep(0.001)
    measuring = any(layout.record_lock(out).exists() and layout.record_lock(out).stat().st_size
                    and not out.exists() for out in outputs) and descendants(pid)
    os.kill(pid, signal.SIGKILL if measuring else signal.SIGCONT)
    return bool(measuring)


@pytest.mark.slow
@lane_test
def test_a_killed_pack_keeps_its_runs_and_the_next_start_measures_the_rest(tmp_path):
    """Its own sweep (the shape is the test): fault_app over 6 n x k = 2 (n = 19 fails its first call),
    runs of 0.4 s, packs of at most 4 runs, 1 retry. The pack job's runner is SIGKILLed once its pack
    has a record: Snakemake starts the pack again, which archives the lost attempt and measures the rest;
    the flaky run is retried by its pack. Then the same command (nothing to do), then k = 3 (new packs
    of round 2 only)."""
    state = tmp_path / "state"
    state.mkdir()
    cfg = {**fault_config(state, ns=[1, 2, 4, 6, 8, 19], k=2, sleep=0.4, retries=1, results="results"),
           "bundle": "packs", "pack": {"runs": 4, "seconds_per_run": 1}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [str(PERFSWEEP), "run", "c.yaml", "--cores", "2", "--no-report", "--", "results/tables/faults/medians.csv"]
    results = tmp_path / "results"

    plan = subprocess.run([str(PERFSWEEP), "plan", "c.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert plan.returncode == 0 and "packs: 4 jobs for 12 runs" in plan.stdout, plan.stdout + plan.stderr

    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = None
    t0 = time.time()
    while time.time() - t0 < 120 and killed is None and proc.poll() is None:
        for pack_file in (results / "packs").glob("r0-*.json") if (results / "packs").is_dir() else []:
            outputs = [out for _, _, out in json.loads(pack_file.read_text())["runs"]]
            if len(outputs) < 3 or not (tmp_path / outputs[0]).exists():
                continue
            runner = subprocess.run(["pgrep", "-n", "-f", "--", f"python.* -m perfsweep.runner --pack "
                                     f"{pack_file.relative_to(tmp_path)}"], capture_output=True, text=True).stdout.split()
            if runner and _kill_mid_run(int(runner[0]), [tmp_path / out for out in outputs[1:]]):
                killed = pack_file.stem
                break
        time.sleep(0.02)
    out, _ = proc.communicate(timeout=600)
    assert killed, "no pack was caught mid-way"
    assert proc.returncode == 0, out[-4000:]

    recs = _records(results)
    assert len(recs) == 12 and all(r["status"] == "ok" for r in recs.values()), recs
    plan = json.loads(layout.packs_plan(results).read_text())["packs"]
    for pid, members in plan.items():
        for index, run in enumerate(members):
            study, config_id, rep = run.rsplit("/", 2)
            r = recs[f"{study}/{config_id}/{rep}.json"]
            assert r["pack"] == {"id": pid, "index": index, "of": len(members)}
    att = archived(results)
    lost = [a for runs in att.values() for a in runs if a.get("lost")]
    assert len(lost) == 1 and lost[0]["pack"]["id"] == killed, lost
    assert "its runner ended without a record" in lost[0]["error"]
    assert recs[f"{lost[0]['run_id']}.json"]["attempt"] == 2  # the lost attempt spent one of 2
    for run_id, attempts in att.items():
        ok = [a for a in attempts if a["status"] == "ok"]
        assert len(ok) == 1, (run_id, attempts)  # measured once
    assert sum(a["status"] == "failed" for k in range(2) for a in att[f"faults/n=19/rep{k}"]) == 1  # flaky
    assert not list(results.rglob("*.tmp"))

    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    manifests = {p.name: p.stat().st_mtime_ns for p in (results / "packs").glob("*.txt")}

    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**cfg, "repetitions": 3}))
    more = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert more.returncode == 0, more.stdout[-3000:] + more.stderr[-3000:]
    after = {p.name: p.stat().st_mtime_ns for p in (results / "packs").glob("*.txt")}
    assert {k: v for k, v in after.items() if k in manifests} == manifests  # the old packs did not run
    assert sorted(set(after) - set(manifests)) and all(k.startswith("r2-") for k in set(after) - set(manifests))
    assert len(_records(results)) == 18
    att2 = archived(results)
    assert all(len(att2[run_id]) == len(attempts) for run_id, attempts in att.items())  # none measured again


def test_scheduler_durations_and_job_fields_parse_what_slurm_prints():
    from perfsweep.cluster import scheduler

    assert scheduler._duration("1-02:03:04") == 93784 and scheduler._duration("05:06") == 306
    assert scheduler._duration("UNLIMITED") is None and scheduler._duration("INVALID") is None
    assert scheduler.story(env={}) == {}  # outside SLURM: nothing to tell


def _one_pack(tmp_path, ns, sleep):
    """A pack file of fault_app runs over ``ns`` (one configuration each) in ``tmp_path``; (path, outputs)."""
    from perfsweep.sweep.spec import RunSpec

    (tmp_path / "state").mkdir()
    sweep = load_config({**fault_config(tmp_path / "state", ns=ns, k=1, sleep=sleep, results=str(tmp_path / "r")),
                         "bundle": "packs"}, source="t")
    configs = sweep.study("faults").configurations()
    runs = [("faults", c.config_id, 0) for c in configs]
    pack = packs.Pack("r0-p1t1-000", 0, 1, 1, tuple(runs))
    specs = {run: RunSpec.build(sweep, c, 0) for run, c in zip(runs, configs)}
    outputs = {run: layout.record(sweep.results, *run) for run in runs}
    path = tmp_path / "pack.json"
    path.write_text(packs.pack_file_text(pack, specs, outputs))
    return path, [outputs[r] for r in runs]


def test_a_pack_stops_before_its_time_limit_and_its_next_start_measures_the_rest(tmp_path, monkeypatch):
    """In-process, with the scheduler's answers given (a job with 10 s left, then one with an hour): the
    pack measures its first run, finds too little time for the next (1.5 x its longest run + 10 s) and
    stops with exit code 1 and no attempt spent on the others; its next start measures only those. The
    stop rests on a second answer (the first, counted down, said the next run would not fit); with an
    hour left the pack asks once for its two runs."""
    from perfsweep.cluster import scheduler
    from perfsweep.sweep import pack_run

    path, outputs = _one_pack(tmp_path, [1, 2, 4], sleep=0.0)
    monkeypatch.setattr(scheduler, "story", lambda job_id=None, env=None: {"job_id": "7", "restarts": 0})
    left = iter([10.0, 10.0])  # before the first run: just enough; before the second: less than 1.5 x its longest + 10 s
    monkeypatch.setattr(scheduler, "time_left", lambda job_id=None: next(left))
    monkeypatch.setattr(pack_run, "MARGIN", 10.0)
    assert pack_run.run_pack(str(path), 30.0, 0, str(tmp_path / "m.txt")) == 1
    assert [Path(o).exists() for o in outputs] == [True, False, False]
    assert not (tmp_path / "m.txt").exists()
    assert len(list((tmp_path / "r" / "archive").rglob("*.json"))) == 1  # the others spent no attempt
    assert next(left, None) is None  # both answers asked for
    asked = []
    monkeypatch.setattr(scheduler, "time_left", lambda job_id=None: asked.append(1) or 3600.0)
    assert pack_run.run_pack(str(path), 30.0, 0, str(tmp_path / "m.txt")) == 0
    assert len(asked) == 1  # once for the pack's two runs, not once a run
    recs = [check_record(o) for o in outputs]
    assert all(r["status"] == "ok" and r["attempt"] == 1 for r in recs)
    assert [r["pack"]["index"] for r in recs] == [0, 1, 2] and recs[0]["time"] == pytest.approx(0.01)
    assert (tmp_path / "m.txt").read_text().split() == outputs


def _archive(results):
    return sorted((results / "archive").rglob("*.json"))


def test_a_deleted_record_or_a_changed_launch_is_measured_again_not_counted_as_spent(tmp_path):
    """retries 0: the archive's ok attempts, and attempts of another launch, spend nothing (found by
    bench/chaos_packs.py's review: both came back as 'attempt 1 (the last) left no result')."""
    from perfsweep.sweep import pack_run

    path, outputs = _one_pack(tmp_path, [1, 2], sleep=0.0)
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    Path(outputs[0]).unlink()
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    rec = check_record(outputs[0])
    assert rec["status"] == "ok" and rec["attempt"] == 2  # measured again: the user asked for it
    # the launch changed (the app sleeps 0.01 s more): the workflow sets the records aside, the pack
    # measures them again with the new command, its earlier attempts no attempt of this launch
    data = json.loads(path.read_text())
    for key, text in data["specs"].items():
        spec = json.loads(text)
        spec["command"][-1] = "0.01"
        data["specs"][key] = json.dumps(spec, sort_keys=True)
    path.write_text(json.dumps(data))
    for out in outputs:
        Path(out).unlink()
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    recs = [check_record(o) for o in outputs]
    assert all(r["status"] == "ok" and r["launch"]["spec_command"][-1] == "0.01" for r in recs), recs


def test_a_runner_killed_after_its_archive_copy_loses_nothing_and_the_next_start_settles(tmp_path):
    """The runner archived an ok attempt and died before its record was in place (the lock file still
    holds the attempt): the next start makes the archived attempt the record and measures nothing; a
    runner that died before archiving (retries 0) leaves a failure record that every later start keeps."""
    from perfsweep.sweep import pack_run
    from perfsweep.sweep.spec import RunSpec

    path, outputs = _one_pack(tmp_path, [1, 2], sleep=0.0)
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    results = tmp_path / "r"
    ok = check_record(outputs[0])
    Path(outputs[0]).unlink()
    layout.record_lock(outputs[0]).write_text(json.dumps({k: v for k, v in ok.items() if k != "status"}))
    before = _archive(results)
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    assert check_record(outputs[0]) == ok and _archive(results) == before  # restored, nothing measured
    assert layout.record_lock(outputs[0]).read_text() == ""
    # killed before the archive copy: a lost attempt, which with retries 0 is the run's last
    second = check_record(outputs[1])
    Path(outputs[1]).unlink()
    started = {k: v for k, v in second.items() if k not in ("status", "time", "error", "finished_at")}
    started.update(attempt=2, started_at="2026-11-29T00:00:00.000+00:00")
    layout.record_lock(outputs[1]).write_text(json.dumps(started))
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0
    failed = check_record(outputs[1])
    assert failed["status"] == "failed" and failed["attempts_spent"] and "lost" not in failed
    assert "its runner ended without a record" in failed["error"]
    spec = RunSpec.from_json(json.loads(path.read_text())["specs"]["s1"], 30.0, 0)
    assert spec.launched(failed)  # kept by the workflow: not set aside and made again
    archived = _archive(results)
    assert pack_run.run_pack(str(path), 30.0, 0, None) == 0  # settled: nothing more
    assert _archive(results) == archived and check_record(outputs[1]) == failed
