import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import process_state, runner_argv, wait_for_app
from perfsweep.cluster.launch import resolve
from perfsweep.config import load_config
from perfsweep.sweep.run import execute, main
from perfsweep.sweep.spec import RunSpec

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
    assert rec["launch"]["timeout"] == 0.5 and "killed after the timeout of 0.5 s (config key timeout:" in rec["error"]


def test_a_timeout_kills_the_apps_processes_and_spares_the_callers_own(tmp_path):
    """execute() in a process that has children of its own (a tool that embeds the runner, or the test
    session): a run that times out takes its app and the app's helper down, and neither kills nor reaps
    the caller's child started before it (before 9326625 it did both)."""
    import subprocess
    import time

    own = subprocess.Popen(["sleep", "60"])
    helper_pid = tmp_path / "helper.pid"
    app = (f"import subprocess, time; p = subprocess.Popen(['sleep', '60']); "
           f"open('{helper_pid}', 'w').write(str(p.pid)); time.sleep(30 + {{n}})")
    try:
        rec = execute(spec_of(sweep_for(f"{PY} -c \"{app}\"", tmp_path, timeout=2)), tmp_path / "rec.json")
        assert rec["status"] == "timeout"
        helper = int(helper_pid.read_text())
        t0 = time.time()
        while process_state(helper) not in (None, "Z") and time.time() - t0 < 10:
            time.sleep(0.05)
        assert process_state(helper) in (None, "Z")  # killed
        assert own.poll() is None  # alive, and not reaped by the runner
    finally:
        own.kill()
        own.wait()


def test_a_run_that_timed_out_under_a_shorter_timeout_is_of_another_launch(tmp_path):
    """RunSpec.launched: a raised timeout makes the runs that timed out run again, and only those."""
    spec = spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, timeout=60))
    launch = {"command": spec.command, "timeout": 30}
    assert spec.launched({"status": "timeout", "launch": launch, "wall_time": 30.1}) is False
    assert spec.launched({"status": "timeout", "launch": {**launch, "timeout": 60}, "wall_time": 60.1})
    assert spec.launched({"status": "timeout", "launch": {**launch, "timeout": 90}, "wall_time": 90.1})  # lowered
    assert spec.launched({"status": "ok", "launch": launch, "wall_time": 1.0})  # measured: kept
    assert spec.launched({"status": "failed", "launch": launch, "wall_time": 1.0})
    # records made before the timeout was recorded: their wall time (at least the timeout that killed them)
    assert spec.launched({"status": "timeout", "launch": {"command": spec.command}, "wall_time": 30.1}) is False
    assert spec.launched({"status": "timeout", "launch": {"command": spec.command}, "wall_time": 60.2})
    # a time limit of SLURM with no wall time and no recorded timeout: nothing to compare, kept
    assert spec.launched({"status": "timeout", "launch": {"command": spec.command}})
    assert spec.launched({"status": "timeout", "launch": {**launch, "command": ["other"]}, "wall_time": 90}) is False


def test_a_run_that_failed_with_fewer_attempts_than_retries_allows_is_of_another_launch(tmp_path):
    spec = spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, retries=2))
    assert spec.retries == 2 and "retries" not in json.loads(spec.to_json())
    launch = {"command": spec.command, "timeout": spec.timeout}
    for status in ("failed", "timeout"):
        assert not spec.launched({"status": status, "launch": launch, "attempt": 2})  # 3 allowed now
        assert spec.launched({"status": status, "launch": launch, "attempt": 3})
    assert spec.launched({"status": "ok", "launch": launch, "attempt": 1})


def test_a_record_whose_output_was_read_with_other_patterns_is_of_another_launch(tmp_path):
    app = {"time_pattern": r"^(\S+)$", "patterns": {"x": r"x=(\S+)"}}
    spec = spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app=app))
    rec = execute(spec, tmp_path / "rec.json")
    assert rec["launch"]["time_pattern"] == r"^(\S+)$" and rec["launch"]["patterns"] == {"x": r"x=(\S+)"}
    assert spec.launched(rec)
    assert not spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={**app, "patterns": {}})).launched(rec)
    assert not spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={"time_pattern": r"(\S+)"})).launched(rec)
    # records made before the patterns were recorded: not known, kept
    old = {**rec, "launch": {k: v for k, v in rec["launch"].items() if k not in ("time_pattern", "patterns")}}
    assert spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={"time_pattern": r"(\S+)"})).launched(old)


def test_missing_pattern_is_unreadable_output(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={"time_pattern": r"time=(\d+)"})
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["error"].startswith("unreadable output: time_pattern")


def test_retry_attempt_archives_and_signals_failure_without_output(tmp_path):
    sweep = sweep_for(f"{PY} -c 'import sys; sys.exit({{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    assert main(runner_argv(spec, out, "--attempt", 1, "--retries", 1)) == 1
    assert not out.exists()
    assert main(runner_argv(spec, out, "--attempt", 2, "--retries", 1)) == 0
    assert json.loads(out.read_text())["status"] == "failed"
    assert len(list((tmp_path / "results" / "archive").rglob("*.json"))) == 2


def test_spec_json_is_deterministic(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path)
    a, b = spec_of(sweep), spec_of(sweep)
    assert a.to_json() == b.to_json()
    assert RunSpec.from_json(a.to_json(), a.timeout) == a
    # the timeout is not in the text (Snakemake's params): a raised one reruns only what timed out
    assert a.to_json() == replace(a, timeout=a.timeout * 2).to_json() and "timeout" not in json.loads(a.to_json())


def test_launcher_template_expands_processes(tmp_path):
    cfg = {"app": {"name": "ljmd", "args": {"steps": 3}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5},
           "studies": {"s": {"vary": {"p": [1, 2]}}}, "results": str(tmp_path)}
    sweep = load_config(cfg, "t.yaml")
    spec = spec_of(sweep, 1)
    assert spec.command[:6] == ["{mpiexec}", "-n", "2", "{python}", "-m", "perfsweep.apps.ljmd"]
    # where the tools live is resolved when the run starts: the mpiexec beside the runner's Python
    assert resolve(spec.command)[:4] == [str(Path(sys.executable).with_name("mpiexec")), "-n", "2", sys.executable]
    assert "--p" not in spec.command and spec.command[-2:] == ["--steps", "3"]


def test_where_the_python_and_mpiexec_live_is_no_part_of_a_runs_identity(tmp_path):
    cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5},
           "studies": {"s": {"vary": {"p": [1, 2]}}}, "results": str(tmp_path), "launcher": "{mpiexec} -n {p}"}
    spec = spec_of(load_config(cfg, "t.yaml"))
    mpiexec = str(Path(sys.executable).with_name("mpiexec"))
    assert sys.executable not in spec.to_json() and mpiexec not in spec.to_json()  # Snakemake's params
    rec = execute(spec, tmp_path / "rec.json")
    assert rec["status"] == "ok", rec["error"]
    launch = rec["launch"]  # as run (provenance) and as the spec gives it (identity)
    assert launch["command"][:2] == [mpiexec if Path(mpiexec).exists() else "mpiexec", "-n"]
    assert launch["command"][3] == sys.executable and launch["spec_command"][:-2] == spec.command
    assert launch["command"][:-2] == resolve(spec.command) and launch["command"][-2:] == launch["spec_command"][-2:]
    elsewhere = ["/elsewhere/.venv/bin/mpiexec", "-n", "1", "/elsewhere/.venv/bin/python", *launch["command"][4:]]
    assert spec.launched({**rec, "launch": {**launch, "command": elsewhere}})  # a moved checkout, a new venv
    assert not spec_of(load_config({**cfg, "launcher": "{mpiexec} -bind-to core -n {p}"}, "t.yaml")).launched(rec)
    assert not spec_of(load_config({**cfg, "launcher": "mpiexec -n {p}"}, "t.yaml")).launched(rec)
    assert not spec_of(load_config({**cfg, "app": {"name": "ljmd", "args": {"steps": 3}}}, "t.yaml")).launched(rec)
    # a record made before spec_command: its command, the spec's resolved wherever the tools lived
    old = {k: v for k, v in launch.items() if k != "spec_command"}
    assert spec.launched({**rec, "launch": old}) and spec.launched({**rec, "launch": {**old, "command": elsewhere}})
    bare = ["mpiexec", "-n", "1", "/usr/bin/python3.11", *launch["command"][4:]]  # PATH's mpiexec, another Python
    assert spec.launched({**rec, "launch": {**old, "command": bare}})
    for other in (["/x/mpiexec", "-bind-to", "core", "-n", "1", *elsewhere[3:]], [*elsewhere[:-4], "--steps", "3"],
                  ["/x/mpirun", *elsewhere[1:]], [*elsewhere[:3], "/x/perl", *elsewhere[4:]]):
        assert not spec.launched({**rec, "launch": {**old, "command": other}})


def test_a_true_flag_option_is_passed_without_a_value_and_a_false_one_not_at_all(tmp_path):
    import subprocess

    cfg = {"app": {"name": "ljmd", "args": {"steps": 1, "release-memory": True, "start": "lattice"}},
           "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5}, "studies": {"s": {"vary": {"n": [100, 120]}}},
           "results": str(tmp_path)}
    command = spec_of(load_config(cfg, "t.yaml")).command
    assert command[-5:] == ["--release-memory", "--start", "lattice", "--steps", "1"]
    # the app itself accepts it (argparse: a store_true flag takes no value)
    app = command[command.index("perfsweep.apps.ljmd") - 2:]
    assert subprocess.run([*resolve(app), "--report", str(tmp_path / "r.json")], capture_output=True).returncode == 0
    cfg["app"]["args"]["release-memory"] = False
    assert "--release-memory" not in spec_of(load_config(cfg, "t.yaml")).command


def test_terminated_run_leaves_a_killed_record_in_the_archive(tmp_path):
    import signal
    import subprocess

    sweep = sweep_for(f"{PY} -c 'import time; time.sleep(30 + {{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    proc = subprocess.Popen([PY, "-m", "perfsweep.runner", *runner_argv(spec, out)])
    wait_for_app(proc.pid, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert not out.exists()  # no half-written result
    (archived,) = (tmp_path / "results" / "archive").rglob("*.json")
    rec = json.loads(archived.read_text())
    assert rec["status"] == "killed" and rec["error"] == "terminated by signal 15"


def test_inside_a_slurm_job_the_cluster_launcher_starts_the_ranks(tmp_path, monkeypatch):
    from perfsweep.sweep.run import launch_command

    sweep = load_config({"app": {"name": "ljmd"}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
                         "studies": {"s": {"vary": {"p": [1, 2]}}}, "results": str(tmp_path),
                         "cluster": {"launcher": "openmpi"}})
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[1], 0)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    command, env = launch_command(spec)
    assert command == spec.command and command[0] == "{mpiexec}" and env is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "1(x2)")  # the allocation is known: no scontrol call
    command, env = launch_command(spec)
    assert command[:3] == ["mpirun", "-n", "2"] and command[3:] == spec.command[3:]
    assert "-launcher" not in command  # no MPICH-only options for Open MPI
    assert env["SLURM_JOB_ID"] == "42"


def test_non_utf8_output_and_a_crash_by_signal_leave_records(tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import os, signal, sys\nsys.stdout.buffer.write(b'\\xff\\xfe noise\\ntime: 0.5\\n')\n"
                   "sys.stdout.flush()\nif int(sys.argv[1]) == 2: os.kill(os.getpid(), signal.SIGSEGV)\n")
    sweep = sweep_for(f"{PY} {app} {{n}}", tmp_path, app={"time_pattern": r"^time: (\S+)"})
    ok = execute(spec_of(sweep, 0), tmp_path / "a.json")
    assert ok["status"] == "ok" and ok["time"] == 0.5 and "\ufffd\ufffd noise" in ok["stdout_tail"]
    crashed = execute(spec_of(sweep, 1), tmp_path / "b.json")
    assert crashed["status"] == "failed" and crashed["returncode"] == -11 and crashed["time"] is None
    assert crashed["error"] == "killed by signal 11 (SIGSEGV): \ufffd\ufffd noise | time: 0.5"
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8")) == crashed


def test_unmatched_pattern_quotes_the_last_lines_of_the_output(tmp_path):
    lines = "; ".join(f"print('line {i}')" for i in range(8))
    sweep = sweep_for(f"{PY} -c \"{lines}; print({{n}})\"", tmp_path, app={"time_pattern": r"time=(\d+)"})
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["time"] is None
    assert rec["error"] == ("unreadable output: time_pattern (time=(\\d+)) not found on stdout; "
                            "last lines: line 4 | line 5 | line 6 | line 7 | 1")


@pytest.mark.parametrize("text, error", [
    ("", "time_pattern (time: (\\S+)) not found on stdout; last lines: (no output)"),
    ("time: abc\n", "time_pattern (time: (\\S+)) matched 'abc', not a number; last lines: time: abc"),
    ("time: nan\n", "time_pattern (time: (\\S+)) matched 'nan', not a finite number >= 0; last lines: time: nan"),
    ("time: -1\n", "time_pattern (time: (\\S+)) matched '-1', not a finite number >= 0; last lines: time: -1"),
])
def test_extract_metrics_refuses_what_is_not_a_time(text, error):
    from perfsweep.apps.output import extract_metrics

    with pytest.raises(ValueError) as exc:
        extract_metrics(text, {"time_pattern": r"time: (\S+)"})
    assert str(exc.value) == error


def test_extract_metrics_reads_time_and_patterns():
    from perfsweep.apps.output import extract_metrics

    app = {"time_pattern": r"^time: (\S+)", "patterns": {"gflops": r"GFLOP/s: (\S+)"}}
    assert extract_metrics("x\ntime: 1.5\nGFLOP/s: 3e9\n", app) == {"time": 1.5, "metrics": {"gflops": 3e9}}
    assert extract_metrics("anything", {}) == {"time": None, "metrics": {}}


def test_a_stale_timings_file_is_not_deleted_and_not_taken_for_this_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stale = tmp_path / "t-1.json"
    stale.write_text(json.dumps({"ranks": [{"rank": 0, "total": 9.0}]}))
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path, app={"timings_json": "t-{n}.json"})
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and "t-1.json was not rewritten by this run" in rec["error"]
    assert stale.exists()  # nothing the config names is deleted
    writer = f"{PY} -c 'import json; json.dump({{{{\"ranks\": [{{{{\"rank\": 0, \"total\": 0.25}}}}]}}}}, open(\"t-{{n}}.json\", \"w\"))'"
    rec = execute(spec_of(sweep_for(writer, tmp_path, app={"timings_json": "t-{n}.json"})), tmp_path / "rec2.json")
    assert rec["status"] == "ok" and rec["time"] == 0.25


def test_a_record_written_meanwhile_by_an_interrupted_sweeps_runner_is_kept(tmp_path):
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    first = execute(spec, out)
    assert main(runner_argv(spec, out)) == 0
    assert json.loads(out.read_text()) == first  # not measured again, not overwritten
    assert len(list((tmp_path / "results" / "archive").rglob("*.json"))) == 1


def test_a_runner_that_cannot_follow_its_run_leaves_a_failure_record_with_the_cause(tmp_path):
    """An exception of perfsweep's own (here: a timeout beyond what the OS clock takes) is the record's
    error, not a bare exit without a record."""
    import dataclasses

    from perfsweep.sweep.run import execute

    spec = dataclasses.replace(spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path)), timeout=1e300)
    out = tmp_path / "rec.json"
    rec = execute(spec, out)
    assert rec["status"] == "failed" and rec["time"] is None and rec["returncode"] is None
    assert rec["error"].startswith("perfsweep's runner failed: OverflowError: "), rec["error"]
    assert json.loads(out.read_text())["error"] == rec["error"]
    assert len(list((tmp_path / "results" / "archive").rglob("*.json"))) == 1


def test_a_crash_by_a_signal_without_a_name_is_named_by_its_number(tmp_path):
    """A real-time signal (40: between SIGRTMIN and SIGRTMAX, which have no names of their own) ends the
    app: the record names the signal by its number."""
    sweep = sweep_for(f"{PY} -c 'import os; print(\"ran {{n}}\", flush=True); os.kill(os.getpid(), 40)'", tmp_path)
    rec = execute(spec_of(sweep), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["returncode"] == -40
    assert rec["error"] == "killed by signal 40: ran 1"


@pytest.mark.parametrize("report, error", [
    ({"ranks": []}, "no list of ranks"),
    ({"ranks": [{"rank": 0, "total": 0.25}], "time": -1}, "time -1 is not a finite number >= 0"),
])
def test_a_timings_file_without_ranks_or_with_no_time_fails_its_run(tmp_path, monkeypatch, report, error):
    monkeypatch.chdir(tmp_path)
    text = json.dumps(report).replace("{", "{{").replace("}", "}}")  # (braces of the command are placeholders)
    writer = f"{PY} -c 'import json, sys; json.dump(json.loads(sys.argv[1]), open(\"t-{{n}}.json\", \"w\"))' '{text}'"
    rec = execute(spec_of(sweep_for(writer, tmp_path, app={"timings_json": "t-{n}.json"})), tmp_path / "rec.json")
    assert rec["status"] == "failed" and rec["time"] is None
    assert f"timings file t-1.json: {error}" in rec["error"], rec["error"]


def test_a_damaged_file_where_the_record_goes_is_measured_over(tmp_path):
    """What stands at the output and is no whole record (here: a cut one) is no run measured meanwhile:
    the run is measured, and its record is the output (the archive has the one attempt)."""
    sweep = sweep_for(f"{PY} -c 'print({{n}})'", tmp_path)
    spec = spec_of(sweep)
    out = tmp_path / "rec.json"
    out.write_text('{"run_id": "s/n=1/rep0", "status": "o')
    assert main(runner_argv(spec, out)) == 0
    rec = json.loads(out.read_text())
    assert rec["status"] == "ok" and rec["run_id"] == "s/n=1/rep0"
    assert len(list((tmp_path / "results" / "archive").rglob("*.json"))) == 1


def test_a_bundle_needs_one_output_per_spec(tmp_path, capsys):
    spec = spec_of(sweep_for(f"{PY} -c 'print({{n}})'", tmp_path))
    with pytest.raises(SystemExit) as exc:
        main(["--spec", spec.to_json(), "--spec", spec.to_json(), "--output", str(tmp_path / "a.json"),
              "--timeout", "5"])
    assert exc.value.code == 2 and "give one --output per --spec" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()  # nothing ran
