"""The cluster path against a real SLURM controller and two nodes n1, n2 of one CPU each on this host
(perfsweep.cluster.local_slurm), through workflow/profiles/local-slurm."""

import json
import os
import subprocess
import time

import pandas as pd
import pytest
import yaml

from conftest import BIN, REPO

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
PROFILE = REPO / "workflow" / "profiles" / "local-slurm"


OPT_IN = "PERFSWEEP_TEST_SLURM"


def cluster_skip_reason(env=os.environ, euid=None):
    """Why the cluster tests cannot run here, or None. They start daemons (munged, slurmctld, one slurmd
    per node), so they run only when asked: PERFSWEEP_TEST_SLURM=1 (.ci/run sets it)."""
    if env.get(OPT_IN) != "1":
        return f"SLURM tests start daemons: set {OPT_IN}=1 to run them (.ci/run does)"
    if (os.geteuid() if euid is None else euid) != 0:
        return "the local SLURM cluster needs root"
    return None


@pytest.fixture(scope="module")
def cluster():
    """The local multi-node cluster, started for this module and stopped after it (with everything
    local_slurm started, munged too). Installs nothing: with the opt-in and no SLURM, the tests fail."""
    reason = cluster_skip_reason()
    if reason:
        pytest.skip(reason)
    from perfsweep.cluster import local_slurm

    before = local_slurm.running()
    # the machine's own slurm.conf: after a killed session, not the one that session left in place
    conf = local_slurm.machine_conf()
    nodes = local_slurm.start(nodes=2)
    yield nodes
    if not before:  # leave a cluster someone else started running, stop ours
        local_slurm.stop(quiet=True)
        # the machine's slurm.conf as it was (none: a SLURM client would wait for the gone controller)
        assert (local_slurm.CONF.read_text() if local_slurm.CONF.exists() else None) == conf


def snakemake_slurm(cfgfile, cwd, *extra, background=False):
    # targets first: --configfile takes every following word as another config file
    cmd = [str(BIN / "snakemake"), *extra, "--snakefile", str(REPO / "Snakefile"), "--profile", str(PROFILE),
           "--configfile", str(cfgfile)]
    if background:
        return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)


def records(results):
    return {str(p.relative_to(results / "runs")): json.loads(p.read_text()) for p in (results / "runs").rglob("*.json")}


def write_config(tmp_path, **cfg):
    cfg = {"results": str(tmp_path / "results"), **cfg}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return tmp_path / "c.yaml"


LJMD = {"app": {"name": "ljmd", "args": {"steps": 4}},
        "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1}}


def test_sweep_runs_through_slurm_to_the_medians(cluster, tmp_path):
    cfg = write_config(tmp_path, **LJMD, repetitions=2,
                       studies={"np": {"vary": {"n": [100, 200], "p": [1, 2]}},
                                "mp": {"vary": {"m": [1, 2], "p": [1, 2]}}})
    targets = [str(tmp_path / "results" / "tables" / s / "medians.csv") for s in ("np", "mp")]
    proc = snakemake_slurm(cfg, tmp_path, *targets)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recs = records(tmp_path / "results")
    assert len(recs) == 16
    for rec in recs.values():
        p = rec["parameters"]["p"]
        assert rec["status"] == "ok"
        assert rec["slurm"]["job_id"].isdigit() and rec["slurm"]["nodelist"]
        assert rec["slurm"]["partition"] == "debug"  # the plugin clears it: from scontrol show job
        assert rec["launch"]["command"][:4] == ["srun", "--mpi=pmi2", "-n", str(p)]  # the default launcher
        assert len(rec["ranks"]) == p
        # one CPU per node: a 2-rank run spans both nodes, one rank on each
        assert rec["nodes"] == (["n1", "n2"] if p == 2 else [rec["slurm"]["nodelist"]])
        assert sum(rec["ranks_per_node"].values()) == p and max(rec["ranks_per_node"].values()) == 1
        assert rec["cores"] == p  # the allocation's CPUs (one per task), not the host's: never oversubscribed
    assert len({r["slurm"]["job_id"] for r in recs.values()}) == 16  # one allocation per run
    for study in ("np", "mp"):
        med = pd.read_csv(tmp_path / "results" / "tables" / study / "medians.csv").set_index("config_id")
        assert len(med) == 4 and (med["n_runs"] == 2).all() and not med["oversubscribed"].any()
        # the medians come from a configuration's undisturbed runs where it has any (tables.undisturbed_where_any):
        # n1 and n2 are this host's two cores, so two jobs at once may disturb each other's runs
        some = med["n_disturbed"] < med["n_runs"]
        used = (med["n_runs"] - med["n_disturbed"]).where(some, med["n_runs"])
        assert (med["n_ok"] == used).all(), med[["n_ok", "n_runs", "n_disturbed"]]
    again = snakemake_slurm(cfg, tmp_path, *targets)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    # sane next to a local run of the same configurations (same machine, same run; a loose bound)
    from perfsweep.config import load_config_file
    from perfsweep.sweep.run import execute
    from perfsweep.sweep.spec import RunSpec

    sweep = load_config_file(cfg)
    for c in sweep.study("np").configurations():
        local = [execute(RunSpec.build(sweep, c, k), tmp_path / "local" / f"{c.config_id}-{k}.json")["time"]
                 for k in range(2)]
        on_cluster = [r["time"] for r in recs.values() if r["run_id"].startswith(f"np/{c.config_id}/")]
        assert 0.1 < min(on_cluster) / min(local) < 10, (c.config_id, on_cluster, local)


def two_node_study(tmp_path, cluster_section, app=None, **extra):
    """p = 1, 2 over the 2 one-CPU nodes through the given launcher; returns the records."""
    cfg = write_config(tmp_path, **(app or LJMD), repetitions=2, cluster=cluster_section,
                       studies={"p": {"vary": {"p": [1, 2]}}}, **extra)
    target = str(tmp_path / "results" / "tables" / "p" / "medians.csv")
    proc = snakemake_slurm(cfg, tmp_path, target)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recs = list(records(tmp_path / "results").values())
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    for rec in recs:
        if rec["parameters"]["p"] == 2:
            assert rec["nodes"] == ["n1", "n2"] and rec["ranks_per_node"] == {"n1": 1, "n2": 1}
            assert rec["slurm"]["nodelist"] == "n[1-2]" and rec["slurm"]["tasks_per_node"] == "1(x2)"
    return recs


def test_mpich_mpiexec_spans_two_nodes_in_bundles(cluster, tmp_path):
    recs = two_node_study(tmp_path, {"launcher": "mpich"}, bundle="repetitions")
    assert len({r["slurm"]["job_id"] for r in recs}) == 2  # one allocation per configuration
    assert sorted((tmp_path / "results" / "bundles" / "p").iterdir()) == [
        tmp_path / "results" / "bundles" / "p" / f"p={p}.txt" for p in (1, 2)]
    for rec in recs:
        assert rec["launch"]["command"][0].endswith("mpiexec") and "-launcher" not in rec["launch"]["command"]
        assert rec["mpi"]["library"] == "MPICH"


DEBIAN_PYTHON = "/usr/bin/python3"


def debian_mpi4py_on_open_mpi():
    if not os.path.exists("/usr/bin/orterun"):
        return False
    proc = subprocess.run([DEBIAN_PYTHON, "-c", "import mpi4py, numpy"], capture_output=True)
    return proc.returncode == 0


def test_open_mpi_mpirun_spans_two_nodes(cluster, tmp_path):
    """Open MPI's mpirun reads the allocation and starts one rank per node, unbound (the local cluster's
    TaskProlog: its nodes share one host, and mpirun would bind each node's rank to core 0). The project's mpi4py is
    built on MPICH's wheel, so the app here is the same ljmd run by Debian's Python with Debian's
    mpi4py, which is built on Debian's Open MPI (.ci/run installs openmpi-bin, python3-mpi4py,
    python3-numpy); the config's setup puts perfsweep's source on its path."""
    if not debian_mpi4py_on_open_mpi():
        if os.environ.get("CI"):
            raise AssertionError("Open MPI with Debian's mpi4py is missing (.ci/run installs it)")
        pytest.skip("needs Debian's openmpi-bin, python3-mpi4py and python3-numpy")
    app = {"app": {"command": "{launcher} " + DEBIAN_PYTHON + " -m perfsweep.apps.ljmd --n {n} --m {m} --d {d}"
                              " --c {c} --steps 4 --report timings-p{p}.json",
                   "timings_json": "timings-p{p}.json"},
           "parameters": LJMD["parameters"]}
    # one repetition at a time writes a configuration's timings file: keep runs of a p apart in time
    recs = two_node_study(tmp_path, {"launcher": "openmpi", "setup": f"export PYTHONPATH={REPO / 'src'}"}, app)
    for rec in recs:
        assert rec["launch"]["command"][:3] == ["bash", "-lc", f"export PYTHONPATH={REPO / 'src'}\nexec \"$@\""]
        assert rec["launch"]["command"][4:7] == ["mpirun", "-n", str(rec["parameters"]["p"])]
        assert "-launcher" not in rec["launch"]["command"]
        assert rec["mpi"]["library"] == "Open MPI"
        if rec["parameters"]["p"] == 2:  # not both bound to core 0 of their node (one host): 2 cores
            assert set().union(*(r["cpus"] for r in rec["ranks"])) == {0, 1}, rec["ranks"]


def test_more_ranks_than_the_cluster_has_cpus_fail_instead_of_hanging(cluster, tmp_path):
    """p = 3 on 2 CPUs: sbatch rejects the job (EnforcePartLimits), the run gets a failure record."""
    cfg = write_config(tmp_path, **LJMD, repetitions=1, studies={"s": {"vary": {"n": [100, 200], "p": [1, 3]}}})
    proc = snakemake_slurm(cfg, tmp_path, str(tmp_path / "results" / "tables" / "s" / "medians.csv"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "More processors requested than permitted" in proc.stdout + proc.stderr
    recs = records(tmp_path / "results")
    assert {k: r["status"] for k, r in recs.items()} == {
        "s/n=100_p=1/rep0.json": "ok", "s/n=200_p=1/rep0.json": "ok",
        "s/n=100_p=3/rep0.json": "failed", "s/n=200_p=3/rep0.json": "failed"}
    assert "ended before the run started" in recs["s/n=100_p=3/rep0.json"]["error"]


def cancel_when_running(wildcards_part, timeout=300):
    """scancel the first running job whose comment (the plugin puts the rule's wildcards there) contains
    ``wildcards_part``, 3 s after it started; returns its job id."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %k"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            job, _, comment = line.partition(" ")
            if wildcards_part in comment:
                time.sleep(3)  # let the run start inside the job
                subprocess.run(["scancel", job], check=True)
                return job
        time.sleep(0.5)
    raise AssertionError(f"no running SLURM job for {wildcards_part!r} within {timeout} s")


def test_run_cancelled_on_its_last_attempt_leaves_a_failure_record(cluster, tmp_path):
    """retries: 0, one run cancelled while it runs: a failure record written on the submit side's
    extra attempt, medians and models from the rest, exit code 0."""
    cfg = write_config(tmp_path, app={"name": "ljmd", "args": {"steps": 4}},
                       parameters={"n": 3000, "m": 3, "d": 0.5, "c": 1.5, "p": 1}, repetitions=1,
                       studies={"s": {"vary": {"c": [1.5, 2.0, 2.5, 6.0]}}})
    targets = [str(tmp_path / "results" / "tables" / "s" / "medians.csv"),
               str(tmp_path / "results" / "models" / "s" / "models.csv")]
    proc = snakemake_slurm(cfg, tmp_path, *targets, background=True)
    cancelled = cancel_when_running("c=6")  # the c = 6 run takes longest
    output, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, output[-4000:]
    recs = records(tmp_path / "results")
    assert len(recs) == 4
    failed = recs["s/c=6/rep0.json"]
    assert failed["status"] == "failed" and failed["attempt"] == 1
    assert f"SLURM ended job {cancelled}" in failed["error"] and "CANCELLED" in failed["error"]
    assert all(r["status"] == "ok" for k, r in recs.items() if k != "s/c=6/rep0.json")
    var = pd.read_csv(tmp_path / "results" / "tables" / "s" / "variability.csv").sort_values("c")
    assert list(var["n_runs"]) == [1, 1, 1, 1] and list(var["n_failed"]) == [0, 0, 0, 1]
    assert "1 failed" in output  # the study's summary line
    med = pd.read_csv(targets[0])
    assert sorted(med["c"].unique()) == [1.5, 2.0, 2.5]  # medians of the runs that survived
    assert (tmp_path / "results" / "models" / "s" / "models.csv").exists()


def test_cancelled_run_is_retried_and_the_sweep_completes(cluster, tmp_path):
    cfg = write_config(tmp_path, app={"name": "ljmd", "args": {"steps": 400}},  # ~10 s per run
                       parameters={"n": 300, "m": 2, "d": 0.5, "c": 1.5, "p": 1}, repetitions=1, retries=1,
                       studies={"s": {"vary": {"n": [200, 300]}}})
    target = str(tmp_path / "results" / "tables" / "s" / "medians.csv")
    proc = snakemake_slurm(cfg, tmp_path, target, background=True)
    cancelled = cancel_when_running("")
    output, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, output[-4000:]
    recs = records(tmp_path / "results")
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs.values())
    retried = [r for r in recs.values() if r["attempt"] == 2]
    assert len(retried) == 1 and retried[0]["slurm"]["job_id"] != cancelled
    assert "SLURM status is: 'CANCELLED'" in output


def slurm_nice(job_id):
    """The nice value SLURM holds for a job (the local cluster keeps ended jobs for MinJobAge=600 s)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(next(w for w in out.stdout.split() if w.startswith("Nice=")).removeprefix("Nice="))


def test_the_run_order_reaches_slurm_and_the_records(cluster, tmp_path):
    """The same seed gives the same recorded order on the cluster, another seed another; each run job
    reaches SLURM with the nice value of its place (round, then position in the round's random order)."""
    from perfsweep.sweep.order import run_order

    ns = (100, 150, 200, 250)
    ran = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        where = tmp_path / name
        where.mkdir()
        cfg = write_config(where, **LJMD, repetitions=2, seed=seed, studies={"s": {"vary": {"n": list(ns)}}})
        targets = [str(where / "results" / "runs" / "s" / f"n={n}" / f"rep{k}.json") for n in ns for k in range(2)]
        proc = snakemake_slurm(cfg, where, *targets)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        recs = list(records(where / "results").values())
        assert len(recs) == 8 and all(r["status"] == "ok" for r in recs)
        expected = run_order(seed, [("s", f"n={n}", k) for n in ns for k in range(2)])
        for rec in recs:
            assert rec["order"] == expected[("s", rec["config_id"], rec["repetition"])], rec["run_id"]
        # SLURM got the order: the nice values rise with (round, position)
        by_place = sorted(recs, key=lambda r: (r["order"]["round"], r["order"]["position"]))
        nice = [slurm_nice(r["slurm"]["job_id"]) for r in by_place]
        assert nice == sorted(nice) and len(set(nice)) == 8 and nice[0] == 0, nice
        ran[name] = [r["config_id"] for r in by_place]
    assert ran["a"] == ran["b"]
    assert ran["a"] != ran["c"]


def test_a_paired_measurement_runs_on_slurm_its_variants_back_to_back(cluster, tmp_path):
    """Paired measurement (config key variants:, issue 43) on the cluster: every configuration's variants
    take adjacent places in each round's order and reach SLURM with adjacent nice values; the records
    name their variant; the whole workflow then models both and perfsweep compare judges the pairs."""
    ns = (100, 150, 200, 250, 300)
    cfg = write_config(tmp_path, **LJMD, repetitions=2, variants={"before": {}, "after": {"args": {"steps": 5}}},
                       studies={"s": {"vary": {"n": list(ns)}}})
    proc = snakemake_slurm(cfg, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    recs = list(records(tmp_path / "results").values())
    assert len(recs) == 2 * 5 * 2 and all(r["status"] == "ok" for r in recs)
    assert {r["variant"] for r in recs} == {"before", "after"} and all(r["study"] == f"s@{r['variant']}" for r in recs)
    by_place = sorted(recs, key=lambda r: (r["order"]["round"], r["order"]["position"]))
    for first, second in zip(by_place[::2], by_place[1::2]):  # each pair: one configuration's two variants
        assert (first["config_id"], first["repetition"]) == (second["config_id"], second["repetition"])
        assert {first["variant"], second["variant"]} == {"before", "after"}
    nice = [slurm_nice(r["slurm"]["job_id"]) for r in by_place]
    assert nice == sorted(nice) and len(set(nice)) == len(nice), nice
    out = subprocess.run([str(BIN / "perfsweep"), "compare", str(tmp_path / "results"), "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["paired"] and data["a"].endswith("(before)") and data["b"].endswith("(after)")
