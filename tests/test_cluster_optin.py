"""The test suite changes nothing on the machine unless asked: the SLURM tests start daemons only with
PERFSWEEP_TEST_SLURM=1, and install no packages at all."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from sweeps.slurm import OPT_IN, cluster_skip_reason

DAEMONS = {"slurmctld", "slurmd", "slurmdbd", "munged"}


def daemon_pids():
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "comm").read_text().strip() in DAEMONS:
                    pids.add(int(proc.name))
            except OSError:
                pass
    return pids


def package_state():
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n", "slurmctld", "slurmd", "munge"],
                          capture_output=True, text=True)
    return proc.stdout


def test_skip_reason_names_the_opt_in():
    assert OPT_IN in cluster_skip_reason(env={}, euid=0)
    assert OPT_IN in cluster_skip_reason(env={OPT_IN: "yes"}, euid=0)  # only "1" opts in
    assert "root" in cluster_skip_reason(env={OPT_IN: "1"}, euid=1000)
    assert cluster_skip_reason(env={OPT_IN: "1"}, euid=0) is None


@pytest.mark.quiet  # counts the machine's SLURM daemons: not while the session's cluster work runs
def test_without_the_opt_in_the_slurm_tests_skip_and_start_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != OPT_IN}
    daemons, packages = daemon_pids(), package_state()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(REPO / "tests" / "test_slurm.py"), "--basetemp", str(tmp_path / "t")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "passed" not in out and "failed" not in out and "error" not in out.lower(), out[-3000:]
    assert "SKIPPED" in out and f"set {OPT_IN}=1 to run them" in out, out[-3000:]
    assert daemon_pids() <= daemons, "a daemon was started without the opt-in"
    assert package_state() == packages


def test_stop_puts_back_the_slurm_conf_that_start_replaced(tmp_path, monkeypatch):
    """No daemons: stop() with the record start() writes when it replaces /etc/slurm/slurm.conf."""
    from perfsweep.cluster import local_slurm

    state, conf = tmp_path / "state", tmp_path / "etc" / "slurm.conf"
    monkeypatch.setattr(local_slurm, "STATE", state)
    monkeypatch.setattr(local_slurm, "STARTED", state / "started.json")
    monkeypatch.setattr(local_slurm, "CONF_BEFORE", state / "before.json")
    monkeypatch.setattr(local_slurm, "CONF", conf)
    state.mkdir()
    conf.parent.mkdir()
    for machine_had in (None, "ClusterName=theirs\n"):
        (state / "before.json").write_text(json.dumps({"text": machine_had}))
        conf.write_text("ClusterName=perfsweep\n")
        local_slurm.stop(quiet=True, keep_munge=True)  # a restart inside start(): its config stays
        assert conf.read_text() == "ClusterName=perfsweep\n"
        local_slurm.stop(quiet=True)
        assert (conf.read_text() if conf.exists() else None) == machine_had
        assert not (state / "before.json").exists()


def test_a_killed_sessions_leftovers_are_not_taken_for_the_machines(tmp_path, monkeypatch):
    """A session killed while its cluster ran leaves its slurm.conf, the record of the machine's own and
    pids that are dead or, after a reboot, another program's (CI failed on this: the fixture took the
    leftover slurm.conf for the machine's). Nothing of it is alive, stop() kills none of those pids and
    puts back the machine's own slurm.conf."""
    from perfsweep.cluster import local_slurm

    state, conf = tmp_path / "state", tmp_path / "etc" / "slurm.conf"
    monkeypatch.setattr(local_slurm, "STATE", state)
    monkeypatch.setattr(local_slurm, "STARTED", state / "started.json")
    monkeypatch.setattr(local_slurm, "CONF_BEFORE", state / "before.json")
    monkeypatch.setattr(local_slurm, "CONF", conf)
    monkeypatch.setattr(local_slurm, "CTLD_PID", state / "slurmctld.pid")
    state.mkdir()
    conf.parent.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"])  # a live process that is no daemon of ours
    try:
        dead = 2**22 + 1  # beyond the largest pid_max: no process
        (state / "started.json").write_text(json.dumps({"slurmctld": sleeper.pid, "slurmd-n1": dead,
                                                        "munged": os.getpid()}))
        (state / "slurmctld.pid").write_text(str(sleeper.pid))
        (state / "before.json").write_text(json.dumps({"text": None}))
        conf.write_text("ClusterName=perfsweep\n")
        assert local_slurm.running() == {}
        assert local_slurm._pid_of(state / "slurmctld.pid") is None  # start() would start its own
        assert local_slurm.machine_conf() is None
        local_slurm.stop(quiet=True)
        assert sleeper.poll() is None, "stop() killed a process that was not its daemon"
        assert not conf.exists() and not (state / "before.json").exists()
        assert local_slurm.machine_conf() is None
        conf.write_text("ClusterName=theirs\n")  # no record: the one in place is the machine's
        assert local_slurm.machine_conf() == "ClusterName=theirs\n"
    finally:
        sleeper.kill()
        sleeper.wait()
