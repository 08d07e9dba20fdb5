"""Nothing lost, nothing leaked (issue 13), with the real Snakemake and a stand-in external app that
misbehaves on purpose (tests/apps/fault_app.py): faults, a study in which every run fails, SIGKILL of
the whole process group or of Snakemake alone mid-sweep, and damaged records."""

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from perfsweep import layout
from perfsweep.sweep.order import run_order
from perfsweep.sweep.record import check_record
from conftest import wait_for_app
from sweeps.lane import lane_test
from sweeps.tiny import FAULTS_FAILED, FAULTS_NS, fault_config

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PERFSWEEP = Path(sys.executable).with_name("perfsweep")


def write_config(path, results, state, **keys):
    """Write tiny.fault_config (fault_app over n; keys: ns, k, sleep, retries, timeout, extra_studies, seed)."""
    path.write_text(yaml.safe_dump(fault_config(state, results=results, **keys), sort_keys=False))


def run_command(cfg, *targets):
    """``perfsweep run CONFIG --cores 2 --no-report [-- TARGETS]``: the command a user types."""
    return [str(PERFSWEEP), "run", str(cfg), "--cores", "2", "--no-report", *(["--", *targets] if targets else [])]


def perfsweep_run(cfg, cwd, *targets):
    return subprocess.run(run_command(cfg, *targets), cwd=cwd, capture_output=True, text=True, timeout=900)


def leftover_processes(marker):
    """Processes whose command line mentions ``marker`` (a test's unique state directory)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(marker) in cmd:
            found.append((int(pid), cmd))
    return found


def archived(results):
    """{run id: [archived attempts]} over results/archive."""
    out = {}
    for path in (results / "archive").rglob("*.json"):
        rec = json.loads(path.read_text())
        out.setdefault(rec["run_id"], []).append(rec)
    return out


def records(results):
    return {p: check_record(p) for p in sorted((results / "runs").rglob("rep*.json"))}


def test_faults_every_run_leaves_a_record_and_the_models_use_the_survivors(faults_sweep):
    """Read-only on the shared faults_sweep (tests/sweeps/tiny.py): 12 n x k = 2 = 24 runs; 5 n fail
    (10 runs), 2 more print non-UTF-8 bytes or fail once (flaky); 1 retry; hangs are killed after 2 s."""
    results = faults_sweep.results
    console = faults_sweep.stdout + faults_sweep.stderr
    assert "Traceback" not in console and "KeyError" not in console, console[-5000:]
    # the study in which every run failed says so in one line; the others finish (keep-going)
    assert faults_sweep.returncode != 0
    assert re.search(r"perfsweep: study broken: no successful run \(2 of 2 failed; e\.g\. broken/n=1/rep0: "
                     r"exit code 1: no license 1\)", console), console[-5000:]
    assert "nothing to aggregate, see results/runs/broken/ and the failure records" in console
    assert faults_sweep.stderr.strip().splitlines()[-1] == (  # (--no-report: its runs table, no report)
        "perfsweep: study broken failed: no successful run (2 of 2 failed; e.g. broken/n=1/rep0: exit code 1: no "
        "license 1); its runs and their errors: results/tables/broken/runs.csv; fix it and run the same command again")

    recs = {r["run_id"]: r for r in records(results).values()}
    assert len(recs) == 2 * len(FAULTS_NS) + 2  # every run of both studies has its record
    by_n = {}
    for r in recs.values():
        if r["study"] == "faults":
            by_n.setdefault(r["parameters"]["n"], []).append(r)
    assert sorted(by_n) == FAULTS_NS
    for n, recs_n in by_n.items():
        for r in recs_n:
            if n in FAULTS_FAILED:
                assert r["status"] in ("failed", "timeout") and FAULTS_FAILED[n] in r["error"], r
                assert r["time"] is None and r["attempt"] == 2  # retried once, as configured
            else:
                assert r["status"] == "ok" and r["time"] == pytest.approx(0.01 * n), r
    assert by_n[7][0]["status"] == "timeout"
    assert "last lines: (no output)" in by_n[17][0]["error"]
    assert "\ufffd" in by_n[11][0]["stdout_tail"] and by_n[11][0]["status"] == "ok"  # non-UTF-8 survives
    assert "garbage" in by_n[13][0]["error"]  # the failure quotes what the app printed

    # retries as configured: a failing run was attempted twice, the flaky n=19 once more than needed
    att = archived(results)
    for n in FAULTS_FAILED:
        for k in range(2):
            assert sorted(a["attempt"] for a in att[f"faults/n={n}/rep{k}"]) == [1, 2]
    assert sum(len(att[f"faults/n=19/rep{k}"]) for k in range(2)) == 3
    for n in set(FAULTS_NS) - set(FAULTS_FAILED) - {19}:
        assert all(len(att[f"faults/n={n}/rep{k}"]) == 1 for k in range(2))

    # tables count the failures; the models use the 7 surviving configurations
    survivors = sorted(set(FAULTS_NS) - set(FAULTS_FAILED))
    var = pd.read_csv(results / "tables" / "faults" / "variability.csv")
    assert int(var["n_failed"].sum()) == 10 and int(var["n_ok"].sum()) == 2 * len(survivors) == 14
    med = pd.read_csv(results / "tables" / "faults" / "medians.csv")
    assert sorted(med["n"]) == survivors
    models = pd.read_csv(results / "models" / "faults" / "models.csv")
    main = models[(models["region"] == "all") & (models["metric"] == "time")].iloc[0]
    pred = pd.read_csv(results / "models" / "faults" / "predictions.csv")
    assert len(pred[(pred["region"] == "all") & (pred["metric"] == "time")]) == len(survivors)
    assert main["adj_r2"] > 0.999, main
    assert re.search(r"perfsweep: study faults measured: 14/24 runs ok, 10 failed \(e\.g\. faults/n=(3|5|7|13|17)/rep[01]: "
                     r"(failed|timeout): ", console), console[-5000:]
    assert "every run's status and error: results/tables/faults/runs.csv)" in console
    # no process left behind (the hang and its grandchild were killed with their process group)
    assert leftover_processes(faults_sweep.work / "state") == []


def _wait_for_records(results, n, timeout=240):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if len(list((results / "runs").rglob("rep*.json"))) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} records after {timeout} s")


def _snapshot(results):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (results / "runs").rglob("rep*.json")}


# The interruptions, in the order one sweep gets them: a signal to whom, and how perfsweep ends
INTERRUPTIONS = [("process group", signal.SIGKILL), ("snakemake alone", signal.SIGKILL),
                 ("snakemake alone", signal.SIGINT), ("process group", signal.SIGINT),
                 ("perfsweep alone", signal.SIGTERM)]


@lane_test
def test_interrupted_mid_sweep_then_the_same_command_completes_and_repeats_nothing(tmp_path):
    """One sweep (24 runs of ~0.25 s), started 6 times with the same command: each of the first 5 starts
    is interrupted in a different way (INTERRUPTIONS) once it has measured a run more, the 6th completes.
    Each start after an interruption is that interruption's "same command again": it starts without
    --unlock or --rerun-incomplete (after a SIGKILL it names and removes the stale lock), keeps every
    finished record and measures runs (the next record appears), and the last completes the sweep with
    every run measured once. One chain, not 5 sweeps of their own: each start costs a Snakemake start-up,
    and what each interruption leaves is what the next start has to take up."""
    state = tmp_path / "state"
    state.mkdir()
    results = tmp_path / "results"
    cfg = tmp_path / "c.yaml"
    # 24 runs of ~0.35 s, one at a time: enough that an interrupted start cannot finish the sweep before it
    # stops. Snakemake may miss perfsweep's first SIGINT (its logger swallows the KeyboardInterrupt), and
    # perfsweep sends the next 2 s later: 12 runs were all done then once (the 5th start measured 7)
    write_config(cfg, results, state, ns=[1, 2, 4, 6], k=6, sleep=0.25)
    total = 24
    # up to the study's tables (the figures and models after them add time, not cases)
    target = f"{results}/tables/faults/runs.csv"
    snapshots = []
    for i, (victim, sig) in enumerate(INTERRUPTIONS):
        err = tmp_path / f"start{i}.err"
        done = len(_snapshot(results)) if results.exists() else 0
        # Ctrl-C in a terminal: SIGINT to the process group (a background shell would have it ignored)
        proc = subprocess.Popen(run_command(cfg, target), cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=err.open("w"), start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            # this start measures (after SIGKILL of Snakemake alone, the one run in flight went on: its
            # record may come first)
            orphan = i and INTERRUPTIONS[i - 1] == ("snakemake alone", signal.SIGKILL)
            _wait_for_records(results, done + 1 + orphan)
            if victim == "process group":
                os.killpg(proc.pid, sig)
            elif victim == "perfsweep alone":  # kill PID
                os.kill(proc.pid, sig)
            else:
                os.kill(_snakemake_of(proc), sig)  # after SIGKILL the runners it started go on (orphans)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        text = err.read_text()
        assert "Traceback" not in text, text[-3000:]
        if i and INTERRUPTIONS[i - 1][1] == signal.SIGKILL:  # Snakemake had no chance to remove its lock:
            assert "stale Snakemake lock(s) of an interrupted run" in text, text[-3000:]  # stale, and removed
        if (victim, sig) == ("snakemake alone", signal.SIGKILL):  # perfsweep says what happened
            assert proc.returncode == 128 + signal.SIGKILL
            assert text.strip().splitlines()[-1] == (
                "perfsweep: Snakemake was stopped by signal 9; finished runs are kept, run the same command again "
                "to measure the rest")
        if sig in (signal.SIGINT, signal.SIGTERM):  # it waited for Snakemake (alone: Snakemake stopped, it says so)
            how = "interrupted" if sig == signal.SIGINT else "terminated"
            assert proc.returncode == 128 + sig
            assert text.strip().splitlines()[-1] == (
                f"perfsweep: {how}; finished runs are kept, run the same command again to measure the rest")
            assert len(_snapshot(results)) < total and leftover_processes(state) == []  # and Snakemake stopped
        before = _snapshot(results)
        assert len(before) > done  # the start after the last interruption measured
        for path in before:
            check_record(path)  # 0 corrupt records: every record there is complete
        snapshots.append(before)

    again = perfsweep_run(cfg, tmp_path, target)  # the same command
    console = again.stdout + again.stderr
    assert again.returncode == 0, console[-5000:]  # no --unlock, no --rerun-incomplete
    assert "Traceback" not in console
    after = _snapshot(results)
    assert len(after) == total
    for before in snapshots:
        assert all(after[p] == h for p, h in before.items())  # completed records untouched
    for path in after:
        check_record(path)
    att = archived(results)
    assert sorted(att) == sorted(r["run_id"] for r in map(check_record, after))
    finished = {rid: [a for a in attempts if a["status"] != "killed"] for rid, attempts in att.items()}
    assert all(len(a) == 1 for a in finished.values())  # 0 completed runs repeated: each measured once
    # only runs cut short were run again: a run's killed attempts all ended before its one measurement began
    for rid, attempts in att.items():
        (done_at,) = [a["started_at"] for a in finished[rid]]
        assert all(a["finished_at"] <= done_at for a in attempts if a["status"] == "killed"), attempts
    assert pd.read_csv(results / "tables" / "faults" / "runs.csv").shape[0] == total
    assert leftover_processes(state) == []


def _snakemake_of(proc):
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    (smk,) = [int(c) for c in children if "snakemake" in Path(f"/proc/{c}/cmdline").read_text()]
    return smk


@lane_test
def test_sigterm_stops_a_snakemake_that_answers_no_signal(tmp_path):
    """Snakemake's SIGTERM handler takes its scheduler's lock; landing while the scheduler holds it (a make
    test run saw it once), it waits for good and answers no signal. SIGTERM to perfsweep must still stop
    the sweep: before, perfsweep passed SIGTERM on, and hung; then it sent SIGINT, and waited for good
    where the hung Snakemake missed it (4 of 8 runs of this test on a loaded host, when it hung Snakemake
    with a burst of 300 SIGTERMs, which hung it 5 times in 8 tries on one day and not at all in 4 on
    another: it skipped then). A stopped Snakemake (SIGSTOP) answers no signal every time: perfsweep kills it
    TERM_GRACE seconds after its own SIGTERM, ends in one line with 143, the runs in flight got SIGINT
    and leave no process, and the same command measures the rest."""
    from perfsweep.cli.run import TERM_GRACE

    state, results, cfg = tmp_path / "state", tmp_path / "results", tmp_path / "c.yaml"
    state.mkdir()
    write_config(cfg, results, state, ns=[1, 2, 4, 6, 8, 9, 10, 12], k=3, sleep=0.05)
    target = f"{results}/tables/faults/runs.csv"
    err = tmp_path / "err"
    proc = subprocess.Popen(run_command(cfg, target), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=err.open("w"), start_new_session=True)
    try:
        _wait_for_records(results, 3)
        smk = _snakemake_of(proc)
        os.kill(smk, signal.SIGSTOP)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM
    assert TERM_GRACE - 1 <= took < TERM_GRACE + 30, took  # it waited for Snakemake, then killed it
    assert not Path(f"/proc/{smk}").exists()  # killed and reaped
    assert err.read_text().strip().splitlines()[-1] == (
        "perfsweep: terminated; finished runs are kept, run the same command again to measure the rest")
    assert leftover_processes(state) == []
    again = perfsweep_run(cfg, tmp_path, target)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert len(_snapshot(results)) == 24


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_signal_to_one_runner_alone(tmp_path, sig):
    """SIGINT to a runner alone (Ctrl-C that Snakemake missed: its logger swallows a KeyboardInterrupt
    that lands while it writes) leaves no failure record: the sweep goes on, and the same command
    measures that run. SIGKILL (the OOM killer) ends the run for good: a failure record that says so.
    2 runs of 1 s (the signal lands once the first's app runs), up to the runs table."""
    state = tmp_path / "state"
    state.mkdir()
    results, cfg = tmp_path / "results", tmp_path / "c.yaml"
    write_config(cfg, results, state, ns=[1, 2], k=1, sleep=1.0)
    target = ("runs", f"{results}/tables/faults/runs.csv")  # (a record that is not there: rule runs)
    proc = subprocess.Popen(run_command(cfg, *target), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.time()
        while not (runners := [(pid, cmd) for pid, cmd in leftover_processes(state)
                               if "-m perfsweep.runner" in cmd and "pipefail" not in cmd]):  # not its shell
            assert time.time() - t0 < 120 and proc.poll() is None, "no runner started"
            time.sleep(0.02)
        pid, cmd = runners[0]
        output = Path(re.search(r"--output (\S+)", cmd).group(1))
        wait_for_app(pid, proc)
        os.kill(pid, sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_id = "/".join([*output.parts[-3:-1], output.stem])
    attempts = archived(results)[run_id]
    if sig == signal.SIGKILL:
        assert proc.returncode == 0, err[-3000:]
        rec = check_record(output)
        assert rec["status"] == "failed" and "its process ended without a record" in rec["error"]
        assert perfsweep_run(cfg, tmp_path, *target).stdout.count("rule run:") == 0
        return
    assert proc.returncode != 0 and not output.exists(), err[-6000:]
    assert [a["status"] for a in attempts] == ["killed"] and attempts[0]["error"] == "terminated by signal 2"
    assert (f"perfsweep: {run_id}: attempt 1 was interrupted (a signal to its runner, e.g. Ctrl-C); no record: "
            "run the sweep again to measure it") in out
    assert len(records(results)) == 1 and all(r["status"] == "ok" for r in records(results).values())  # it went on
    again = perfsweep_run(cfg, tmp_path, *target)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(re.findall(r"^\s*localrule run:", again.stderr, re.MULTILINE)) == 1  # that run only
    assert check_record(output)["status"] == "ok" and len(records(results)) == 2
    assert leftover_processes(state) == []


def test_damaged_records_are_named_set_aside_and_exactly_those_measured_again(tiny_faults_sweep, tmp_path):
    """On a copy of the shared tiny_faults_sweep (6 records): one record deleted, one truncated, one with a
    negative time; the same command measures exactly these three again."""
    sweep = tiny_faults_sweep.copy(tmp_path / "copy")
    results = sweep.results
    runs = results / "runs" / "faults"
    deleted, truncated, negative = runs / "n=1" / "rep0.json", runs / "n=2" / "rep1.json", runs / "n=4" / "rep0.json"
    deleted.unlink()
    text = truncated.read_text()
    truncated.write_text(text[: len(text) // 2])
    rec = json.loads(negative.read_text())
    rec["time"] = -0.04
    negative.write_text(json.dumps(rec))
    untouched = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in runs.rglob("rep*.json")
                 if p not in (truncated, negative)}
    archive_before = {p: p.read_bytes() for p in (results / "archive").rglob("*.json")}

    again = sweep.run("--cores", "2", "--no-report", targets=("runs", "results/tables/faults/runs.csv"))
    console = again.stdout + again.stderr
    assert again.returncode == 0, console[-5000:]
    jobs = re.findall(r"^\s*(?:local)?rule run:\n(?:\s+.*\n)*?\s+output: (\S+)", console, re.MULTILINE)
    rel = [str(p.relative_to(sweep.work)) for p in (deleted, truncated, negative)]  # (results: results)
    assert sorted(jobs) == sorted(rel)  # exactly these three
    named = [line for line in console.splitlines() if line.startswith("perfsweep: damaged record")]
    assert len(named) == 2
    assert any(rel[1] in line and "not valid JSON" in line for line in named), named
    assert any(rel[2] in line and "time: -0.04 is not a finite number >= 0" in line for line in named), named
    # set aside, never deleted
    aside = sorted((results / "quarantine").rglob("*.json"))
    assert [p.read_text() for p in aside] in ([text[: len(text) // 2], json.dumps(rec)],
                                              [json.dumps(rec), text[: len(text) // 2]])
    # nothing else changed: the other records, the archive's earlier attempts
    assert all((p.read_bytes(), p.stat().st_mtime_ns) == v for p, v in untouched.items())
    assert all(p.read_bytes() == b for p, b in archive_before.items())
    for p in runs.rglob("rep*.json"):
        assert check_record(p)["status"] == "ok"
    assert len(pd.read_csv(results / "tables" / "faults" / "runs.csv")) == 6


@lane_test
def test_two_starts_at_once_and_one_later_one_runs_the_others_get_perfsweep_s_refusal(tmp_path):
    """Two `perfsweep run` started together in one directory (before either's Snakemake has parsed the
    workflow and taken its lock), and a third once the first run is measured (not a fixed 3 s later: on a
    slow host neither might hold the lock by then): one measures, the others get perfsweep's refusal in
    one line, not Snakemake's LockException advising --unlock, and nothing of the sweep is lost."""
    state = tmp_path / "state"
    state.mkdir()
    results, cfg = tmp_path / "results", tmp_path / "c.yaml"
    write_config(cfg, results, state, ns=[1, 2, 4], k=2, sleep=1.0)  # 6 runs of 1 s, one after the other
    target = f"{results}/tables/faults/runs.csv"  # (the models and figures after it add time, not cases)
    starts = [subprocess.Popen(run_command(cfg, target), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(2)]
    try:
        _wait_for_records(results, 1)  # the winner measures: it holds the lock, 5 runs of 1 s to go
        late = perfsweep_run(cfg, tmp_path, target)
        ends = [p.communicate(timeout=600) for p in starts]
    finally:
        for p in starts:
            if p.poll() is None:
                p.kill()
    refusal = ("perfsweep: another perfsweep run is working in this directory: wait for it to end or stop it "
               "(Ctrl-C); Snakemake's --unlock would let both write the same records")
    codes = sorted(p.returncode for p in starts)
    assert codes == [0, 2], ends
    refused = ends[[p.returncode for p in starts].index(2)]
    assert refused[1].strip().splitlines() == [refusal] and "LockException" not in refused[0] + refused[1]
    assert late.returncode == 2 and late.stderr.strip().splitlines() == [refusal], late.stderr[-3000:]
    recs = records(results)
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs.values())
    assert all(len(a) == 1 for a in archived(results).values())  # each run measured once
    assert leftover_processes(state) == []


def test_a_timeout_kills_every_descendant_also_those_that_left_with_setsid(tmp_path):
    """n=29 starts a helper in its own session (setsid) and a daemon (setsid, its parent exited), both
    with their output closed, then hangs: out of the app's process group, only the runner's child
    subreaper keeps them where the timeout's kill finds them. No process of the run is left."""
    state = tmp_path / "state"
    state.mkdir()
    results, cfg = tmp_path / "results", tmp_path / "c.yaml"
    write_config(cfg, results, state, ns=[1, 29], k=1, timeout=2)  # (n=1 takes 0.1 s)
    try:
        proc = perfsweep_run(cfg, tmp_path, f"{results}/tables/faults/runs.csv")
        left = leftover_processes(state)
    finally:
        for pid, _ in leftover_processes(state):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    rec = check_record(results / "runs" / "faults" / "n=29" / "rep0.json")
    assert rec["status"] == "timeout" and "killed after the timeout of 2 s" in rec["error"]
    assert check_record(results / "runs" / "faults" / "n=1" / "rep0.json")["status"] == "ok"
    assert left == []


def test_a_leftover_temporary_record_is_named_and_set_aside(tiny_faults_sweep, tmp_path):
    """A crash between a record's temp file and its rename leaves ``.rep0.json.<random>.tmp`` (here, on a
    copy of the shared tiny_faults_sweep: the record deleted, half of it in the temp file, and one in the
    archive): check-records names it, and the next `perfsweep run` moves it under quarantine/ (never
    deleted), says so and measures that run again."""
    sweep = tiny_faults_sweep.copy(tmp_path / "copy")
    results = sweep.results
    record = results / "runs" / "faults" / "n=1" / "rep0.json"
    text = record.read_text()
    record.unlink()
    temps = [record.with_name(".rep0.json.k2x9a1.tmp"),
             results / "archive" / "faults" / "n=2" / ".rep1.attempt1.20261126T000000.000000Z.json.q7w3e2.tmp"]
    for tmp in temps:
        tmp.write_text(text[: len(text) // 2])
    check = subprocess.run([str(PERFSWEEP), "check-records", str(results / "runs"), str(results / "archive")],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 2 and check.stderr.strip().splitlines() == [
        f"perfsweep: {tmp}: a temporary file of a record's write that a crash cut short, not a record (the next "
        "perfsweep run sets it aside)" for tmp in temps]
    again = sweep.run("--cores", "2", "--no-report", targets=("runs", "results/tables/faults/runs.csv"))
    console = again.stdout + again.stderr
    assert again.returncode == 0, console[-3000:]
    for tmp in temps:
        rel = tmp.relative_to(sweep.work)  # (the sweep's config says results: results)
        (moved,) = re.findall(rf"perfsweep: {re.escape(str(rel))}: a temporary file of a record's write that a crash "
                              r"cut short, not a record; moved to (\S+)$", console, re.MULTILINE)
        moved = sweep.work / moved
        assert moved.read_text() == text[: len(text) // 2] and not tmp.exists()
        assert moved.resolve().is_relative_to((results / "quarantine").resolve())
    jobs = re.findall(r"^\s*(?:local)?rule run:\n(?:\s+.*\n)*?\s+output: (\S+)", console, re.MULTILINE)
    assert jobs == [str(record.relative_to(sweep.work))]  # that run only, measured again
    assert all(r["status"] == "ok" for r in records(results).values()) and len(records(results)) == 6
    ok = subprocess.run([str(PERFSWEEP), "check-records", str(results / "runs"), str(results / "archive")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "none damaged" in ok.stdout, ok.stderr


def _report_pages(report):
    """The pages a Snakemake report embeds (base64 data URIs), decoded."""
    text = report.read_text()
    return [base64.b64decode(m).decode(errors="replace")
            for m in re.findall(r"data:text/html;[^\"']*?base64,([A-Za-z0-9+/=]+)", text)]


def test_a_failed_study_leaves_the_report_of_the_others_with_its_failures(faults_sweep, tmp_path):
    """One study whose runs all fail beside a healthy one: the healthy one's tables, models, figures and
    report pages are made, results/report.html is written with them and with the failed study's runs and
    errors, and perfsweep's lines are the last the user sees (what failed, why, what to do), exit 1.
    On a copy of the shared faults_sweep (measured with --no-report, so that this start, with the report,
    finds the broken study failed again and the healthy one's outputs made)."""
    sweep = faults_sweep.copy(tmp_path / "copy")
    results, cfg = sweep.results, sweep.config_file
    proc = sweep.run("--cores", "2", check=False)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-5000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    tail = proc.stderr.strip().splitlines()[-2:]
    assert tail == [
        "perfsweep: study broken failed: no successful run (2 of 2 failed; e.g. broken/n=1/rep0: exit code 1: no "
        "license 1); its runs and their errors: results/report/broken/failures.html; fix it and run the same "
        "command again",
        "perfsweep: report of the other studies written to results/report.html (with the failed studies' runs: "
        "broken)"], proc.stderr[-5000:]
    # nothing lost: every record, and every output of the healthy study
    recs = records(results)
    assert len(recs) == 2 * len(FAULTS_NS) + 2 and sum(r["status"] == "ok" for r in recs.values()) == 14
    from perfsweep.config import load_config_file

    faults = load_config_file(cfg).study("faults")
    made = [*layout.final_outputs("results", "faults", faults.varies_processes()),
            *layout.report_outputs("results", "faults", faults.varies_processes())]
    assert all((sweep.work / p).exists() for p in made)
    pages = _report_pages(results / "report.html")
    assert any("no license 1" in p and "no license 2" in p for p in pages)  # the failed study's page
    assert any("faults: measurements" in p for p in pages)  # the healthy study's pages
    assert leftover_processes(faults_sweep.work / "state") == []


@lane_test
def test_a_full_results_filesystem_is_named_and_a_rerun_after_freeing_space_completes(tmp_path):
    """results/ on a filesystem that is full: a real one, of 2 MiB (tmpfs), mounted in a private user
    and mount namespace (``unshare -rm``): no privilege, no change to the machine, gone with the test's
    processes. Full from the start, `perfsweep run` refuses in one line naming the OS error; filled during
    the sweep (fault_app n=31 fills it, as another program's output would), its last line names it and
    what to do; after the space is freed the same command completes, and no finished record changed."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("no unshare, or user namespaces are not allowed here")
    fs = tmp_path / "fs"
    fs.mkdir()
    results, state, cfg = fs / "results", fs / "state", tmp_path / "c.yaml"
    # the runs of a round go in the seed's random order: a seed that runs two others before the filler
    seed = next(s for s in range(1, 100) if run_order(s, [("faults", f"n={n}", 0) for n in (1, 2, 31, 4)])[
        ("faults", "n=31", 0)]["position"] >= 2)
    write_config(cfg, results, state, ns=[1, 2, 31, 4], k=2, seed=seed)
    run = " ".join(run_command(cfg, f"{results}/tables/faults/runs.csv"))  # (models and figures: no new case)
    script = f"""
        mount -t tmpfs -o size=2m tmpfs {fs} || exit 97
        mkdir {state}
        dd if=/dev/zero of={state}/full bs=64k 2>/dev/null
        {run} > full.out 2> full.err; echo $? > full.rc
        rm {state}/full
        {run} > fill.out 2> fill.err; echo $? > fill.rc
        cp -a {results} filled
        rm {state}/filler
        {run} > again.out 2> again.err; echo $? > again.rc
        cp -a {results} freed
    """
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = {name: ((tmp_path / f"{name}.rc").read_text().strip(), (tmp_path / f"{name}.err").read_text())
           for name in ("full", "fill", "again")}
    assert out["full"][0] == "2" and out["full"][1].strip().splitlines() == [
        f"perfsweep: {cfg}: results: '{results}' cannot be written (No space left on device in {fs}); free space "
        "there and run the same command again"]
    assert out["fill"][0] == "1" and out["fill"][1].strip().splitlines()[-1] == (
        f"perfsweep: {results}: No space left on device: the runs could not write their records and logs (the "
        "finished ones are kept); free space there and run the same command again"), out["fill"][1][-3000:]
    assert out["again"][0] == "0", out["again"][1][-3000:]
    before = {p.relative_to(tmp_path / "filled"): p.read_bytes() for p in (tmp_path / "filled" / "runs").rglob("rep*.json")}
    after = {p.relative_to(tmp_path / "freed"): p for p in (tmp_path / "freed" / "runs").rglob("rep*.json")}
    assert 0 < len(before) < 8 and len(after) == 8
    assert all(after[p].read_bytes() == b for p, b in before.items())  # nothing finished was lost or changed
    assert all(check_record(p)["status"] == "ok" for p in after.values())
    assert not list((tmp_path / "freed").rglob("*.tmp"))
