import json
import sys

import pytest

from perfsweep.config import load_config
from perfsweep.runner import RunSpec, execute, main

PY = sys.executable


def sweep_for(command, tmp_path, **extra):
    cfg = {
        "app": {"command": command, **extra.pop("app", {})},
        "parameters": {"n": 1},
        "studies": {"s": {"vary": {"n": [1, 2]}}},
        "results": str(tmp_path / "results"),
        **extra,
    }
    return load_config(cfg, "test.yaml")


def spec_of(sweep, i=0, rep=0):
    return RunSpec.build(sweep, sweep.studies[0].configurations()[i], rep)


def test_ok_run_reads_patterns_and_time(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print(\"elapsed 0.25 flops {{n}}e9\")'", tmp_path,
                      app={"time_pattern": r"elapsed ([0-9.]+)", "patterns": {"flops": r"flops ([0-9.e]+)"}})
    spec = spec_of(sweep, 1, 3)
    out = tmp_path / "rec.json"
    rec = execute(spec, out)
    assert json.loads(out.read_text()) == rec
    assert rec["status"] == "ok" and rec["error"] is None
    assert rec["time"] == 0.25 and rec["metrics"] == {"flops": 2e9}
    assert rec["run_id"] == "s/n=2/rep3" and rec["parameters"] == {"n": 2, "p": 1}
    assert rec["wall_time"] > 0 and rec["launch"]["command"][0] == PY
    archived = list((tmp_path / "results" / "archive" / "s" / "n=2").glob("rep3.attempt1.*.json"))
    assert len(archived) == 1 and json.loads(archived[0].read_text()) == rec


def test_failed_run_leaves_failure_record(tmp_path):
    sweep = sweep_for(f"{PY} -c 'import sys; sys.exit(\"boom {{n}}\")'", tmp_path)
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["returncode"] == 1
    assert rec["error"] == "exit code 1: boom 1" and rec["time"] is None


def test_timeout_kills_the_process_group(tmp_path):
    sweep = sweep_for(f"{PY} -c 'import time; time.sleep(30 + {{n}})'", tmp_path, timeout=0.5)
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "timeout" and rec["returncode"] is None
    assert rec["wall_time"] < 10


def test_missing_pattern_is_unreadable_output(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={"time_pattern": r"time=(\d+)"})
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["error"].startswith("unreadable output: time_pattern")


def test_retry_attempt_archives_and_signals_failure_without_output(tmp_path):
    sweep = sweep_for(f"{PY} -c 'import sys; sys.exit({{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    assert main(["--spec", spec.to_json(), "--output", str(out), "--attempt", "1", "--retries", "1"]) == 1
    assert not out.exists()
    assert main(["--spec", spec.to_json(), "--output", str(out), "--attempt", "2", "--retries", "1"]) == 0
    assert json.loads(out.read_text())["status"] == "failed"
    assert len(list((tmp_path / "results" / "archive").rglob("*.json"))) == 2


def test_spec_json_is_deterministic(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path)
    a, b = spec_of(sweep), spec_of(sweep)
    assert a.to_json() == b.to_json()
    assert RunSpec.from_json(a.to_json()) == a


def test_launcher_template_expands_processes(tmp_path):
    cfg = {"app": {"name": "ljmd", "args": {"steps": 3}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5},
           "studies": {"s": {"vary": {"p": [1, 2]}}}, "results": str(tmp_path)}
    sweep = load_config(cfg, "t.yaml")
    spec = spec_of(sweep, 1)
    assert spec.command[1:3] == ["-n", "2"] and spec.command[0].endswith("mpiexec")
    assert spec.command[3:6] == [sys.executable, "-m", "perfsweep.apps.ljmd"]
    assert "--p" not in spec.command and spec.command[-2:] == ["--steps", "3"]


def test_terminated_run_leaves_a_killed_record_in_the_archive(tmp_path):
    import signal
    import subprocess
    import time

    sweep = sweep_for(f"{PY} -c 'import time; time.sleep(30 + {{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    proc = subprocess.Popen([PY, "-m", "perfsweep.runner", "--spec", spec.to_json(), "--output", str(out)])
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert not out.exists()  # no half-written result
    (archived,) = (tmp_path / "results" / "archive").rglob("*.json")
    rec = json.loads(archived.read_text())
    assert rec["status"] == "killed" and rec["error"] == "terminated by signal 15"


def test_inside_a_slurm_job_the_cluster_launcher_starts_the_ranks(tmp_path, monkeypatch):
    from perfsweep.runner import launch_command

    sweep = load_config({"app": {"name": "ljmd"}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
                         "studies": {"s": {"vary": {"p": [1, 2]}}}, "results": str(tmp_path),
                         "cluster": {"launcher": "openmpi"}})
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[1], 0)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    command, env = launch_command(spec)
    assert command == spec.command and command[0].endswith("mpiexec") and env is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "1(x2)")  # the allocation is known: no scontrol call
    command, env = launch_command(spec)
    assert command[:3] == ["mpirun", "-n", "2"] and command[3:] == spec.command[3:]
    assert "-launcher" not in command  # no MPICH-only options for Open MPI
    assert env["SLURM_JOB_ID"] == "42"
