"""Damaged records and restart state (perfsweep.sweep.record.check_record, perfsweep.sweep.recover), unit level;
tests/test_faults.py runs the same with the real Snakemake and tests/bad_inputs/ through the CLI."""

import base64
import json
import subprocess
import sys
import threading
import time

import pytest

from perfsweep import layout
from perfsweep.atomic import write_json_atomic
from perfsweep.errors import DamagedRecord
from perfsweep.sweep import recover
from perfsweep.sweep.record import OTHER_LAUNCH, check_record, path_fields, set_aside

REC = {"schema": "perfsweep.run/1", "run_id": "s/n=2_m=0.5/rep1", "study": "s", "config_id": "n=2_m=0.5",
       "repetition": 1, "parameters": {"n": 2.0, "m": 0.5, "p": 1}, "status": "ok", "error": None, "time": 0.5}


def test_path_fields_and_a_consistent_record(tmp_path):
    path = tmp_path / "results" / "runs" / "s" / "n=2_m=0.5" / "rep1.json"
    write_json_atomic(path, REC)
    fields = path_fields(path)
    assert fields == {"study": "s", "config_id": "n=2_m=0.5", "repetition": 1, "params": {"n": "2", "m": "0.5"}}
    assert check_record(path, **fields) == REC
    assert path_fields(tmp_path / "x.json") == {}
    assert path_fields(tmp_path / "runs" / "s" / "a_b=1_c=2" / "rep0.json")["params"] == {"a_b": "1", "c": "2"}


def test_failed_runs_are_valid_records_without_a_time(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(path, {**REC, "status": "timeout", "time": None, "error": "killed after 3 s"})
    assert check_record(path)["status"] == "timeout"


@pytest.mark.parametrize("change, message", [
    ({"time": -1e-9}, "time: -1e-09 is not a finite number >= 0"),
    ({"time": "1.0"}, "time: '1.0' is not a number (status ok)"),
    ({"wall_time": "abc"}, "wall_time: 'abc' is not a finite number >= 0"),
    ({"repetition": True}, "repetition: True is not a int"),
    ({"config_id": "n=3_m=0.5"}, "config_id: 'n=3_m=0.5' does not match its path ('n=2_m=0.5')"),
    ({"parameters": {"n": 2, "m": 0.25}}, "parameters.m: 0.25 does not match its configuration (0.5)"),
    ({"parameters": {"n": 2}}, "parameters.m: None does not match its configuration (0.5)"),
])
def test_inconsistent_records_are_named(tmp_path, change, message):
    path = tmp_path / "runs" / "s" / "n=2_m=0.5" / "rep1.json"
    write_json_atomic(path, {**REC, **change})
    with pytest.raises(DamagedRecord) as exc:
        check_record(path, **path_fields(path))
    assert str(exc.value) == f"{path}: {message}"


def test_check_records_accepts_the_archive_s_killed_attempts_not_a_run_s(tmp_path):
    killed = {**REC, "status": "killed", "time": None, "error": "terminated by signal 2"}
    archived = tmp_path / "results" / "archive" / "s" / "n=2_m=0.5" / "rep1.attempt1.20261125T230000.000000Z.json"
    write_json_atomic(archived, killed)
    cli = [sys.executable, "-m", "perfsweep.cli", "check-records"]
    ok = subprocess.run([*cli, str(tmp_path / "results" / "archive")], capture_output=True, text=True)
    assert ok.returncode == 0 and "1 record(s) checked, none damaged" in ok.stdout, ok.stderr
    run = tmp_path / "results" / "runs" / "s" / "n=2_m=0.5" / "rep1.json"
    write_json_atomic(run, killed)
    bad = subprocess.run([*cli, str(tmp_path / "results")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        f"perfsweep: damaged record {run}: status: 'killed' is not one of ok, failed, timeout")


def test_set_aside_moves_never_deletes(tmp_path):
    results = tmp_path / "results"
    rec = results / "runs" / "s" / "c" / "rep0.json"
    rec.parent.mkdir(parents=True)
    for text in ("first", "second"):
        rec.write_text(text)
        moved = set_aside(rec, results, "T")
        assert not rec.exists() and moved.read_text() == text
    assert sorted(p.name for p in (results / "quarantine" / "T" / "runs" / "s" / "c").iterdir()) == \
        ["rep0.json", "rep0.json.1"]


def _marker(state, key):
    """An incomplete marker as Snakemake's file persistence writes it (base64 of the output path)."""
    path = state / "incomplete" / base64.urlsafe_b64encode(key.encode()).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"external_jobid": null}')
    return path


def test_clear_stale_state_keeps_finished_records_waits_for_runs_in_flight(tmp_path):
    state, results = tmp_path / ".snakemake", tmp_path / "results"
    (state / "locks").mkdir(parents=True)
    (state / "locks" / "0.input.lock").write_text("x\n")
    done = results / "runs" / "s" / "n=1" / "rep0.json"
    write_json_atomic(done, REC)
    in_flight = results / "runs" / "s" / "n=1" / "rep1.json"
    table = results / "tables" / "s" / "runs.csv"
    table.parent.mkdir(parents=True)
    table.write_text("half a tab")
    outside = tmp_path / "elsewhere.csv"
    outside.write_text("keep me")
    markers = {p: _marker(state, str(p)) for p in (done, in_flight, table, outside)}

    held = recover.hold_lock(layout.record_lock(in_flight), wait=False)

    def finish_run():  # the runner of the killed Snakemake finishes its record a little later
        time.sleep(0.5)
        write_json_atomic(in_flight, {**REC, "repetition": 1})
        recover.release_lock(held)

    threading.Thread(target=finish_run).start()
    lines = []
    counts = recover.clear_stale_state(state, results, log=lines.append)
    assert counts == {"locks": 1, "waited": 1, "records_kept": 2, "derived_removed": 1}
    assert not list((state / "locks").iterdir())
    assert done.exists() and in_flight.exists() and not table.exists()
    assert outside.read_text() == "keep me" and markers[outside].exists()  # outside results/: untouched
    assert not any(markers[p].exists() for p in (done, in_flight, table))
    assert any("waiting for the run still in flight" in line for line in lines)


def test_repair_records_names_and_sets_aside_only_damaged_ones(tmp_path):
    results = tmp_path / "results"
    good, bad, missing = (results / "runs" / "s" / "n=1" / f"rep{k}.json" for k in range(3))
    write_json_atomic(good, {**REC, "run_id": "s/n=1/rep0", "config_id": "n=1", "repetition": 0, "parameters": {"n": 1}})
    bad.write_text('{"schema": "perfsweep.run/1", "ti')
    expected = [(str(p), {"study": "s", "config_id": "n=1", "repetition": k, "params": {"n": 1}})
                for k, p in enumerate((good, bad, missing))]
    lines = recover.repair_records(expected, results, dry_run=True, log=lambda line: None)
    assert len(lines) == 1 and "would be set aside" in lines[0] and bad.exists()
    lines = recover.repair_records(expected, results, log=lambda line: None)
    assert len(lines) == 1 and lines[0].startswith(f"perfsweep: damaged record {bad}: not valid JSON")
    assert not bad.exists() and good.exists()
    (aside,) = (results / "quarantine").rglob("rep1.json")
    assert aside.read_text() == '{"schema": "perfsweep.run/1", "ti'


def test_repair_records_sets_aside_the_records_of_another_launch_per_study(tmp_path):
    results = tmp_path / "results"
    paths = [results / "runs" / s / "n=1" / f"rep{k}.json" for s in ("s", "t") for k in range(2)]
    expected = []
    for path in paths:
        study, k = path.parts[-3], int(path.stem[3:])
        write_json_atomic(path, {**REC, "run_id": f"{study}/n=1/rep{k}", "study": study, "config_id": "n=1",
                                 "repetition": k, "parameters": {"n": 1}, "launch": {"command": [study, str(k)]}})
        expected.append((str(path), {"study": study, "config_id": "n=1", "repetition": k, "params": {"n": 1}}))

    def launched(fields, record):  # study t's launch changed, and s's rep1 was made by another
        return fields["study"] == "s" and record["launch"]["command"] == ["s", "0"]

    lines = recover.repair_records(expected, results, dry_run=True, log=lambda line: None, launched=launched)
    assert lines == [f"perfsweep: study {s}: {n} record(s) {OTHER_LAUNCH} would be set aside under results/superseded/"
                     " and measured again" for s, n in (("s", 1), ("t", 2))]
    assert all(p.exists() for p in paths) and not (results / "superseded").exists()
    texts = {p: p.read_text() for p in paths}
    lines = recover.repair_records(expected, results, log=lambda line: None, launched=launched)
    assert len(lines) == 2 and lines[1].startswith("perfsweep: study t: 2 record(s) of another launch")
    assert lines[1].endswith(", measured again") and " moved under " + str(results / "superseded") in lines[1]
    assert [p.exists() for p in paths] == [True, False, False, False]
    aside = {p.relative_to(p.parents[3]): p.read_text() for p in (results / "superseded").rglob("rep*.json")}
    assert aside == {p.relative_to(results): texts[p] for p in paths[1:]}  # moved whole, nothing deleted


def test_reopen_bundles_sets_aside_the_manifest_of_a_bundle_with_a_missing_record_once(tmp_path):
    results = tmp_path / "results"
    manifests = {c: results / "bundles" / "s" / f"{c}.txt" for c in ("n=1", "n=2", "n=3")}
    for c, manifest in manifests.items():
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(c)
    expected = [(str(results / "runs" / "s" / c / f"rep{k}.json"), {"study": "s", "config_id": c, "repetition": k})
                for c in manifests for k in range(2)]
    write_json_atomic(results / "runs" / "s" / "n=3" / "rep0.json", REC)  # n=3 lacks rep1 only; n=1, n=2 both
    line = f"perfsweep: study s: 3 bundle(s) with a missing record (the first: {expected[0][0]}) "
    assert recover.reopen_bundles(expected, results, dry_run=True, log=lambda x: None) == [line + "would run again"]
    assert all(m.exists() for m in manifests.values())
    assert recover.reopen_bundles(expected, results, log=lambda x: None) == [line + "run again"]
    assert not any(m.exists() for m in manifests.values())
    assert sorted(p.read_text() for p in (results / "quarantine").rglob("*.txt")) == ["n=1", "n=2", "n=3"]
    assert recover.reopen_bundles(expected, results, log=lambda x: None) == []  # nothing left to reopen


def test_only_one_snakemake_of_the_workflow_owns_a_directory(tmp_path):
    code = ("import sys, time; from perfsweep.sweep import recover; "
            "print(recover.acquire_workdir_lock(sys.argv[1]), flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        other = subprocess.run([sys.executable, "-c", code.replace("time.sleep(30)", "pass"), str(tmp_path)],
                               capture_output=True, text=True, timeout=60)
        assert other.stdout.strip() == "False"  # alive elsewhere: its locks are not stale
    finally:
        holder.kill()
        holder.wait()
    again = subprocess.run([sys.executable, "-c", code.replace("time.sleep(30)", "pass"), str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    assert again.stdout.strip() == "True"  # the kernel dropped the lock with the killed process


def test_a_second_perfsweep_run_in_the_same_directory_is_refused_in_one_line(tmp_path):
    """While a workflow runs here (it holds .snakemake/perfsweep.lock), another `perfsweep run` would
    advise Snakemake's --unlock; it is refused before Snakemake starts and runs nothing."""
    code = ("import time; from perfsweep.sweep import recover; "
            "print(recover.acquire_workdir_lock('.snakemake'), flush=True); time.sleep(60)")
    (tmp_path / "c.yaml").write_text(
        'app: {command: "true {n}"}\nparameters: {n: 1}\nstudies: {s: {vary: {n: [1, 2]}}}\nresults: results\n')
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        second = subprocess.run([sys.executable, "-m", "perfsweep.cli", "run", "c.yaml"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert second.returncode == 2 and second.stderr.strip().splitlines() == [
        "perfsweep: another perfsweep run is working in this directory: wait for it to end or stop it (Ctrl-C); "
        "Snakemake's --unlock would let both write the same records"]
    assert not (tmp_path / "results").exists()
