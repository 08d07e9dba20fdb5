"""Launchers, SLURM resources and the allocation of a run (perfsweep.cluster.launch), and the failure
record of a run SLURM ended (perfsweep.sweep.ended). The real cluster runs are in test_slurm.py."""

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import runner_argv, wait_for_app
from perfsweep.sweep.ended import ended_record, record_ended_runs, slurm_end
from perfsweep.cluster.launch import MPIEXEC, ClusterSettings, expand_hostlist, parse_job, placement, resolve
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.sweep.run import main
from perfsweep.sweep.spec import RunSpec

# `scontrol show job -d -o 20` of a 2-node job on the local cluster (SLURM 22.05), shortened
SCONTROL = ("JobId=20 JobName=x UserId=root(0) JobState=RUNNING Partition=debug NodeList=n[1-2] BatchHost=n1 NumNodes=2 "
            "NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=2,mem=2000M,node=2   "
            "Nodes=n[1-2] CPU_IDs=0 Mem=1000 GRES= MinCPUsNode=1")


def test_launcher_per_mpi_flavour():
    values = {"p": "4", "n": "100"}
    assert ClusterSettings().launcher_argv(4, 1, values) == ["srun", "--mpi=pmi2", "-n", "4"]
    assert ClusterSettings(srun_mpi="pmix").launcher_argv(4, 2, values) == ["srun", "--mpi=pmix", "-n", "4", "-c", "2"]
    mpich = ClusterSettings(launcher="mpich").launcher_argv(4, 1, values)
    assert mpich == [MPIEXEC, "-n", "4"]  # resolved when the run starts: the mpiexec beside its Python
    assert resolve(mpich) == [str(Path(sys.executable).with_name("mpiexec")), "-n", "4"]
    assert ClusterSettings(launcher="openmpi", mpirun="/opt/ompi/bin/mpirun").launcher_argv(4, 1, values) == [
        "/opt/ompi/bin/mpirun", "-n", "4"]
    assert ClusterSettings(launcher="openmpi").launcher_argv(2, 3, values)[3:] == ["--map-by", "slot:PE=3"]
    site = ClusterSettings(launcher="site-run -np {p} -t {threads} --tag n{n}")
    assert site.launcher_argv(4, 2, values) == ["site-run", "-np", "4", "-t", "2", "--tag", "n100"]


def test_resources_of_a_run_job():
    s = ClusterSettings(partition="compute", account="proj42", qos="normal", cpus_per_node=48, mem_mb_per_cpu=2000)
    res = s.resources(p=72, threads=1, minutes=11, final=False)
    assert res == {"slurm_partition": "compute", "slurm_account": "proj42", "qos": "normal",
                   "mem_mb_per_cpu": 2000, "tasks": 72, "cpus_per_task": 1, "mpi": "srun", "runtime": 11,
                   "nodes": 2, "slurm_extra": "--exclusive"}
    assert s.resources(p=24, threads=4, minutes=11, final=False)["nodes"] == 2  # 96 CPUs
    # p = 1: the plugin's tasks > 1 rule for mpi jobs; the empty mpi still keeps its job step away
    assert ClusterSettings(exclusive=False).resources(1, 1, 5, False) == {
        "tasks": 1, "cpus_per_task": 1, "mpi": "", "runtime": 5, "slurm_extra": ""}
    final = s.resources(p=72, threads=1, minutes=11, final=True)
    assert final["tasks"] == 1 and final["nodes"] == 1 and final["runtime"] == 1 and final["slurm_extra"] == ""
    assert set(final) == set(res)  # a rule's resources have the same keys on every attempt


def test_threads_per_rank_from_a_parameter():
    assert ClusterSettings(cpus_per_task="t").threads({"t": 4, "p": 2}) == 4
    assert ClusterSettings().threads({"p": 2}) == 1


def test_setup_and_modules_run_before_the_launch():
    s = ClusterSettings(setup="source /opt/site/env.sh", envmodules=("gcc/12", "openmpi/4.1"))
    cmd = s.wrap(["srun", "-n", "2", "./app"])
    assert cmd[:2] == ["bash", "-lc"] and cmd[3:] == ["perfsweep-launch", "srun", "-n", "2", "./app"]
    assert cmd[2] == 'source /opt/site/env.sh\nmodule load gcc/12 openmpi/4.1\nexec "$@"'
    assert ClusterSettings().wrap(["a"]) == ["a"]


def test_allocation_from_scontrol():
    job = parse_job(SCONTROL)
    assert job == {"nodelist": "n[1-2]", "partition": "debug", "num_nodes": 2, "num_tasks": 2, "cpus_per_task": 1,
                   "groups": [("n[1-2]", 1)]}
    assert parse_job(SCONTROL.replace("Partition=debug ", ""))["partition"] is None
    assert expand_hostlist("n[1-3],login5,c[08-10]") == ["n1", "n2", "n3", "login5", "c08", "c09", "c10"]


def test_placement_names_nodes_and_ranks_per_node():
    ranks = [{"rank": 0, "host": "vm", "node": "n1"}, {"rank": 1, "host": "vm", "node": "n2"},
             {"rank": 2, "host": "vm", "node": "n2"}]
    assert placement(ranks, ["n1", "n2"]) == {"nodes": ["n1", "n2"], "ranks_per_node": {"n1": 1, "n2": 2}}
    assert placement([{"rank": 0, "host": "vm"}], ["x"]) == {"nodes": ["vm"], "ranks_per_node": {"vm": 1}}
    assert placement(None, ["n1", "n2"]) == {"nodes": ["n1", "n2"], "ranks_per_node": None}


def test_cluster_section_is_validated(tmp_path):
    base = {"app": {"name": "ljmd"}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 1.5},
            "studies": {"s": {"vary": {"n": [100, 200]}}}}
    with pytest.raises(ConfigError, match=r"cluster: unknown key\(s\).*'partiton'"):
        load_config(dict(base, cluster={"partiton": "x"}), "c.yaml")
    with pytest.raises(ConfigError, match=r"cluster.cpus_per_node: 0 is less than the minimum of 1"):
        load_config(dict(base, cluster={"cpus_per_node": 0}), "c.yaml")
    with pytest.raises(ConfigError, match=r"cluster.cpus_per_task: 'threads' is neither a number nor a parameter"):
        load_config(dict(base, cluster={"cpus_per_task": "threads"}), "c.yaml")
    sweep = load_config(base, "c.yaml")
    assert sweep.extra["cluster"] == {"launcher": "srun", "srun_mpi": "pmi2", "mpirun": "mpirun",
                                      "cpus_per_task": 1, "exclusive": True}


@pytest.fixture
def spec(tmp_path):
    sweep = load_config({"app": {"command": "./app {n}"}, "parameters": {"n": 1},
                         "studies": {"s": {"vary": {"n": [1, 2]}}}, "results": str(tmp_path / "results")})
    return RunSpec.build(sweep, sweep.studies[0].configurations()[0], 0)


def bundle_argv(spec, outputs):
    """The runner's arguments for a bundle: the spec's repetitions 0, 1, ... to these records."""
    argv = ["--timeout", repr(spec.timeout)]
    for k, out in enumerate(outputs):
        argv += ["--spec", replace(spec, repetition=k).to_json(), "--output", str(out)]
    return argv


def slurm_log(tmp_path, job, wildcards, line, rule="rule_run"):
    log = tmp_path / ".snakemake" / "slurm_logs" / rule / wildcards / f"{job}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"slurmstepd-n1: error: {line}\n")


@pytest.mark.parametrize("line,status,says", [
    ("*** JOB 31 ON n1 CANCELLED AT 2026-11-23T13:01:02 ***", "failed", "CANCELLED AT 2026-11-23T13:01:02"),
    ("*** JOB 31 ON n2 CANCELLED AT 2026-11-23T13:01:02 DUE TO TIME LIMIT ***", "timeout", "DUE TO TIME LIMIT"),
    ("*** JOB 31 ON n2 CANCELLED AT 2026-11-23T13:01:02 DUE TO NODE FAILURE ***", "failed", "DUE TO NODE FAILURE"),
])
def test_failure_record_says_how_slurm_ended_the_job(tmp_path, monkeypatch, spec, line, status, says):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "32")  # this (bookkeeping) job's own log is not the one
    slurm_log(tmp_path, 30, "s_n=2_0", "*** JOB 30 ON n1 CANCELLED AT 2026-11-23T13:00:00 ***")  # another run
    slurm_log(tmp_path, 31, "s_n=1_0", line)
    slurm_log(tmp_path, 32, "s_n=1_0", "")
    os.utime(tmp_path / ".snakemake" / "slurm_logs" / "rule_run" / "s_n=1_0" / "32.log", (1, 1))
    os.utime(tmp_path / ".snakemake" / "slurm_logs" / "rule_run" / "s_n=1_0" / "31.log", (2, 2))
    assert slurm_end(spec)[0] == "31"
    rec = ended_record(spec, "out.json", attempt=2)
    assert rec["status"] == status and rec["attempt"] == 1 and rec["time"] is None
    assert rec["error"].startswith("attempt 1 (the last) left no result: SLURM ended job 31: ") and says in rec["error"]


def test_bundle_jobs_have_their_logs_per_configuration(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    slurm_log(tmp_path, 40, "n=1", "*** JOB 40 ON n1 CANCELLED AT 2026-11-23T13:01:02 ***", rule="rule_run_s")
    assert slurm_end(spec) == ("40", "JOB 40 ON n1 CANCELLED AT 2026-11-23T13:01:02")


def test_job_ended_before_the_run_started(tmp_path, monkeypatch, spec):
    """No log line and no archived attempt (cancelled while pending): still a failure record, archived
    too, exit 0; an existing record is never overwritten."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_JOB_ID", "50")  # the bookkeeping attempt runs in a SLURM job of its own
    out = tmp_path / "results" / "runs" / "s" / "n=1" / "rep0.json"
    assert main(runner_argv(spec, out, "--attempt", 2, "--retries", 0)) == 0
    rec = json.loads(out.read_text())
    assert rec["status"] == "failed" and "ended before the run started" in rec["error"]
    assert len(list((tmp_path / "results" / "archive").rglob("rep0.attempt2.*.json"))) == 1
    before = out.read_text()
    assert record_ended_runs([(spec, str(out))], 3) == 0 and out.read_text() == before


def test_archived_interrupted_attempt_names_its_job(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    archive = tmp_path / "results" / "archive" / "s" / "n=1"
    archive.mkdir(parents=True)
    (archive / "rep0.attempt1.20261123T130000.000000Z.json").write_text(json.dumps(
        {"status": "killed", "error": "terminated by signal 15", "slurm": {"job_id": "77"}, "host": "vm"}))
    rec = ended_record(spec, "x.json", attempt=2)
    assert "SLURM job 77 ended the run (terminated by signal 15)" in rec["error"] and rec["slurm"]["job_id"] == "77"


def test_a_local_run_whose_runner_was_stopped_says_so_without_slurm(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    out = tmp_path / "results" / "runs" / "s" / "n=1" / "rep0.json"
    rec = ended_record(spec, str(out), attempt=2)  # no archived attempt: the runner died before it wrote one
    assert rec["error"] == (f"attempt 1 (the last) left no result: its process ended without a record "
                            f"(see {tmp_path / 'results' / 'logs' / 'runs' / 's' / 'n=1' / 'rep0.log'})")
    archive = tmp_path / "results" / "archive" / "s" / "n=1"
    archive.mkdir(parents=True)
    (archive / "rep0.attempt1.20261125T130000.000000Z.json").write_text(json.dumps(
        {"status": "failed", "error": "perfsweep's runner failed: OSError: [Errno 28]", "slurm": None, "host": "vm"}))
    rec = ended_record(spec, str(out), attempt=2)
    assert rec["error"] == ("attempt 1 (the last) left no result: its process was stopped (perfsweep's runner failed: "
                            "OSError: [Errno 28])")
    assert "SLURM" not in rec["error"] and rec["slurm"] is None


def test_a_local_bundle_interrupted_by_ctrl_c_leaves_no_failure_record_and_runs_again(tmp_path, monkeypatch):
    """Ctrl-C that Snakemake misses (its logger swallows a KeyboardInterrupt) still reaches the runner:
    the attempt is archived as killed, for the bundle's runs not started too, and the attempt after the
    last writes no failure record for them (it did: the interrupted runs counted as failed for good)."""
    import signal
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    sweep = load_config({"app": {"command": f"{sys.executable} -c 'import time; time.sleep({{n}})'"},
                         "parameters": {"n": 30}, "studies": {"s": {"vary": {"n": [30, 31]}}}, "results": "results"})
    spec = RunSpec.build(sweep, sweep.studies[0].configurations()[0], 0)
    outs = [tmp_path / "results" / "runs" / "s" / "n=30" / f"rep{k}.json" for k in range(3)]
    argv = bundle_argv(spec, outs)
    manifest = tmp_path / "results" / "bundles" / "s" / "n=30.txt"
    job = [sys.executable, "-m", "perfsweep.runner", *argv, "--retries", "0", "--manifest", str(manifest)]
    proc = subprocess.Popen([*job, "--attempt", "1"], stderr=subprocess.PIPE, text=True)
    wait_for_app(proc.pid, proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 128 + signal.SIGINT
    assert "s/n=30/rep0: terminated by signal 2; attempt archived" in proc.stderr.read()
    archived = sorted((tmp_path / "results" / "archive").rglob("*.json"))
    assert [json.loads(a.read_text())["status"] for a in archived] == ["killed"] * 3
    assert [a.name.split(".")[0] for a in archived] == ["rep0", "rep1", "rep2"]
    # Snakemake, still running, starts the attempt after the last: no failure record, the job fails
    after = subprocess.run([*job, "--attempt", "2"], capture_output=True, text=True)
    assert after.returncode == 1 and not any(o.exists() for o in outs) and not manifest.exists()
    assert ("perfsweep: s/n=30/rep2: attempt 1 was interrupted (a signal to its runner, e.g. Ctrl-C); no record: "
            "run the sweep again to measure it") in after.stdout


def test_the_failure_record_waits_for_a_runner_still_in_flight_and_keeps_its_record(tmp_path, monkeypatch, spec):
    import threading
    import time

    from perfsweep.layout import record_lock
    from perfsweep.sweep.recover import hold_lock, release_lock

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "runs" / "s" / "n=1" / "rep0.json"
    lock = hold_lock(record_lock(out), wait=True)  # the orphaned runner measuring this run

    def orphan_finishes():
        time.sleep(0.5)
        out.write_text('{"status": "ok"}')
        release_lock(lock)

    worker = threading.Thread(target=orphan_finishes)
    worker.start()
    assert record_ended_runs([(spec, str(out))], 2) == 0
    worker.join()
    assert out.read_text() == '{"status": "ok"}'  # not overwritten by a failure record
    assert not list((tmp_path / "results" / "archive").rglob("*.json"))


def test_bundle_manifest_lists_the_records_once_all_are_written(tmp_path, spec):
    outs = [tmp_path / "runs" / f"rep{k}.json" for k in range(2)]
    outs[1].parent.mkdir(parents=True)
    outs[1].write_text("{}")  # a record of an earlier execution of this bundle
    manifest = tmp_path / "bundles" / "n=1.txt"
    argv = bundle_argv(spec, outs)
    # the bookkeeping attempt after the last (retries 0: attempt 2) fills in what is missing, then the manifest
    assert main([*argv, "--attempt", "2", "--retries", "0", "--manifest", str(manifest)]) == 0
    assert manifest.read_text().splitlines() == [str(o) for o in outs]
    assert outs[1].read_text() == "{}" and json.loads(outs[0].read_text())["status"] == "failed"
    # a first attempt starts the bundle afresh: the earlier records go (they are in the archive)
    manifest.unlink()
    assert main([*argv, "--attempt", "1", "--retries", "0", "--manifest", str(manifest)]) == 0
    assert all(json.loads(o.read_text())["attempt"] == 1 for o in outs) and manifest.exists()


def test_the_cores_a_run_had():
    """A run's record says its cores (perfsweep.cluster.launch.available_cores): in a SLURM allocation
    the job's CPUs, summed over its nodes; else this process's affinity."""
    from perfsweep.cluster.launch import available_cores, cpus_of_job

    assert cpus_of_job("4(x2),2") == 10 and cpus_of_job("36") == 36 and cpus_of_job("") is None
    assert available_cores({"SLURM_JOB_ID": "7", "SLURM_JOB_CPUS_PER_NODE": "8(x3)"}) == 24
    assert available_cores({"SLURM_JOB_ID": "7", "SLURM_JOB_CPUS_PER_NODE": "?", "SLURM_CPUS_ON_NODE": "4",
                            "SLURM_NNODES": "2"}) == 8
    assert available_cores({}) == len(os.sched_getaffinity(0))
