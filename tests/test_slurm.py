"""The cluster path against a real SLURM controller and two nodes n1, n2 of one CPU each on this host
(perfsweep.cluster.local_slurm), through workflow/profiles/local-slurm. Every test reads one of the
session's cluster sweeps (tests/sweeps/slurm.py runs them all at once, the cluster started once)."""

import json
import os
import subprocess

import pandas as pd
import pytest

from conftest import BIN, REPO
from sweeps.slurm import debian_mpi4py_on_open_mpi

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def finished(sweep):
    """A sweep's records, once its Snakemake ended well."""
    assert sweep.returncode == 0, sweep.output[-4000:]
    return sweep.records()


def test_sweep_runs_through_slurm_to_the_medians(slurm_sweeps):
    """The ordinary sweep (default launcher srun, one job per run): every run one allocation of its p
    CPUs, a 2-rank run one rank on each node; the medians of 2 repetitions; run again, nothing to do."""
    sweep = slurm_sweeps["srun"]
    recs = finished(sweep)
    assert len(recs) == 4
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
    assert len({r["slurm"]["job_id"] for r in recs.values()}) == 4  # one allocation per run
    med = pd.read_csv(sweep.results / "tables" / "np" / "medians.csv").set_index("config_id")
    assert len(med) == 2 and (med["n_runs"] == 2).all() and not med["oversubscribed"].any()
    # the medians come from a configuration's undisturbed runs where it has any (tables.undisturbed_where_any):
    # n1 and n2 are this host's two cores, so two jobs at once may disturb each other's runs
    some = med["n_disturbed"] < med["n_runs"]
    used = (med["n_runs"] - med["n_disturbed"]).where(some, med["n_runs"])
    assert (med["n_ok"] == used).all(), med[["n_ok", "n_runs", "n_disturbed"]]
    returncode, output = sweep.again
    assert returncode == 0 and "Nothing to be done" in output, output[-3000:]


@pytest.mark.timing
def test_cluster_run_times_are_sane_next_to_local_runs(slurm_sweeps, tmp_path, monkeypatch):
    """The ordinary sweep's runs (about 0.1 s each, p = 1 and 2) against local runs of the same
    configurations on the same machine: within a factor of 10 either way, a bound that a busy host (2-3x)
    cannot cross but a broken launch can (ranks of two nodes bound to one core took 25x as long).
    Measured once."""
    from perfsweep.config import load_config_file
    from perfsweep.sweep.run import execute
    from perfsweep.sweep.spec import RunSpec

    sweep = slurm_sweeps["srun"]
    recs = finished(sweep)
    config = load_config_file(sweep.config_file)
    monkeypatch.chdir(sweep.work)  # where the sweep ran its runs (its results are relative)
    for c in config.study("np").configurations():
        local = [execute(RunSpec.build(config, c, k), tmp_path / f"{c.config_id}-{k}.json")["time"] for k in range(2)]
        on_cluster = [r["time"] for r in recs.values() if r["run_id"].startswith(f"np/{c.config_id}/")]
        assert 0.1 < min(on_cluster) / min(local) < 10, (c.config_id, on_cluster, local)


def two_node_records(sweep, reps):
    """p = 1, 2 over the 2 one-CPU nodes through the sweep's launcher: every run ok, a 2-rank run one rank
    on each node; returns the records."""
    recs = list(finished(sweep).values())
    assert len(recs) == 2 * reps and all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    for rec in recs:
        if rec["parameters"]["p"] == 2:
            assert rec["nodes"] == ["n1", "n2"] and rec["ranks_per_node"] == {"n1": 1, "n2": 1}
            assert rec["slurm"]["nodelist"] == "n[1-2]" and rec["slurm"]["tasks_per_node"] == "1(x2)"
    return recs


def test_mpich_mpiexec_spans_two_nodes_in_bundles(slurm_sweeps):
    sweep = slurm_sweeps["mpich"]
    recs = two_node_records(sweep, reps=2)
    assert len({r["slurm"]["job_id"] for r in recs}) == 2  # one allocation per configuration
    bundles = sweep.results / "bundles" / "p"
    assert sorted(bundles.iterdir()) == [bundles / f"p={p}.txt" for p in (1, 2)]
    for rec in recs:
        assert rec["launch"]["command"][0].endswith("mpiexec") and "-launcher" not in rec["launch"]["command"]
        assert rec["mpi"]["library"] == "MPICH"


def test_open_mpi_mpirun_spans_two_nodes(slurm_sweeps):
    """Open MPI's mpirun reads the allocation and starts one rank per node, unbound (the local cluster's
    TaskProlog: its nodes share one host, and mpirun would bind each node's rank to core 0). The project's
    mpi4py is built on MPICH's wheel, so the app here is the same ljmd run by Debian's Python with Debian's
    mpi4py, which is built on Debian's Open MPI (.ci/run installs openmpi-bin, python3-mpi4py,
    python3-numpy); the config's setup puts perfsweep's source on its path. One repetition: what it
    checks is where and how each run's ranks started."""
    if not debian_mpi4py_on_open_mpi():
        if os.environ.get("CI"):
            raise AssertionError("Open MPI with Debian's mpi4py is missing (.ci/run installs it)")
        pytest.skip("needs Debian's openmpi-bin, python3-mpi4py and python3-numpy")
    recs = two_node_records(slurm_sweeps["openmpi"], reps=1)
    for rec in recs:
        assert rec["launch"]["command"][:3] == ["bash", "-lc", f"export PYTHONPATH={REPO / 'src'}\nexec \"$@\""]
        assert rec["launch"]["command"][4:7] == ["mpirun", "-n", str(rec["parameters"]["p"])]
        assert "-launcher" not in rec["launch"]["command"]
        assert rec["mpi"]["library"] == "Open MPI"
        if rec["parameters"]["p"] == 2:  # not both bound to core 0 of their node (one host): 2 cores
            assert set().union(*(r["cpus"] for r in rec["ranks"])) == {0, 1}, rec["ranks"]


def test_more_ranks_than_the_cluster_has_cpus_fail_instead_of_hanging(slurm_sweeps):
    """p = 3 on 2 CPUs: sbatch rejects the job (EnforcePartLimits), the run gets a failure record, the
    sweep ends with exit code 0. Its own sweep: the rejected job is what it checks."""
    sweep = slurm_sweeps["toomany"]
    recs = finished(sweep)
    assert "More processors requested than permitted" in sweep.output
    assert {k: r["status"] for k, r in recs.items()} == {"toomany/p=1/rep0.json": "ok",
                                                         "toomany/p=3/rep0.json": "failed"}
    assert "ended before the run started" in recs["toomany/p=3/rep0.json"]["error"]


def test_run_cancelled_on_its_last_attempt_leaves_a_failure_record(slurm_sweeps):
    """retries: 0, one run cancelled while it runs: a failure record written on the submit side's
    extra attempt, medians and models from the rest, exit code 0. Its own sweep: the cancel is what it
    checks."""
    sweep = slurm_sweeps["lastattempt"]
    assert sweep.cancel_error is None, sweep.cancel_error
    recs = finished(sweep)
    assert len(recs) == 3
    failed = recs["lastattempt/c=6/rep0.json"]
    assert failed["status"] == "failed" and failed["attempt"] == 1
    assert f"SLURM ended job {sweep.cancelled}" in failed["error"] and "CANCELLED" in failed["error"]
    assert all(r["status"] == "ok" for k, r in recs.items() if k != "lastattempt/c=6/rep0.json")
    var = pd.read_csv(sweep.results / "tables" / "lastattempt" / "variability.csv").sort_values("c")
    assert list(var["n_runs"]) == [1, 1, 1] and list(var["n_failed"]) == [0, 0, 1]
    assert "1 failed" in sweep.output  # the study's summary line
    med = pd.read_csv(sweep.results / "tables" / "lastattempt" / "medians.csv")
    assert sorted(med["c"].unique()) == [1.5, 2.5]  # medians of the runs that survived
    assert (sweep.results / "models" / "lastattempt" / "models.csv").exists()


def test_cancelled_run_is_retried_and_the_sweep_completes(slurm_sweeps):
    """retries: 1, one run cancelled while it runs: its second attempt (another job) measures it, the
    sweep completes. Its own sweep: the cancel is what it checks."""
    sweep = slurm_sweeps["retried"]
    assert sweep.cancel_error is None, sweep.cancel_error
    recs = finished(sweep)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs.values())
    retried = [r for r in recs.values() if r["attempt"] == 2]
    assert [r["run_id"] for r in retried] == ["retried/c=6/rep0"] and retried[0]["slurm"]["job_id"] != sweep.cancelled
    assert "SLURM status is: 'CANCELLED'" in sweep.output


def test_the_run_order_reaches_slurm_and_the_records(slurm_sweeps):
    """The ordinary sweep's records carry the order its seed gives (that another seed gives another,
    test_order checks); each run job reached SLURM with the nice value of its place (round, then position
    in the round's random order): rising with the place, 0 for the first."""
    from perfsweep.sweep.order import nice_values, priorities, run_order

    sweep = slurm_sweeps["srun"]
    recs = list(finished(sweep).values())
    runs = [("np", f"p={p}", k) for p in (1, 2) for k in range(2)]
    expected = run_order(1, runs)  # the config's seed: the default, 1
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    for rec in recs:
        assert rec["order"] == expected[("np", rec["config_id"], rec["repetition"])], rec["run_id"]
    # SLURM got the order: the nice values rise with (round, position)
    by_place = sorted(recs, key=lambda r: (r["order"]["round"], r["order"]["position"]))
    nice = [sweep.nice[r["slurm"]["job_id"]] for r in by_place]  # (scontrol show job once the sweeps ended)
    assert nice == sorted(nice) and len(set(nice)) == 4 and nice[0] == 0, nice
    want = nice_values(priorities(expected))
    assert nice == [want[("np", r["config_id"], r["repetition"])] for r in by_place]


def test_packed_runs_are_placed_as_unpacked_ones_and_a_packs_pairs_sit_side_by_side(slurm_sweeps):
    """Packs on the cluster (bundle: packs, issue 57): the srun sweep's configurations (p = 1, 2; k = 2) as
    two variants in packs of one round and one process count. A packed run records the nodes, ranks per
    node and CPUs of the same run unpacked; every record names its pack and its place; a pack is one
    SLURM job; a configuration's repetitions are in 2 packs; its variants share a pack, side by side."""
    packed, plain = finished(slurm_sweeps["packed"]), finished(slurm_sweeps["srun"])
    assert len(packed) == 8 and all(r["status"] == "ok" for r in packed.values())

    def placement(rec):
        return len(rec["nodes"]), sorted(rec["ranks_per_node"].values()), rec["cores"], len(rec["ranks"])

    expected = {r["parameters"]["p"]: placement(r) for r in plain.values()}
    assert {r["parameters"]["p"]: placement(r) for r in packed.values()} == expected == {
        1: (1, [1], 1, 1), 2: (2, [1, 1], 2, 2)}
    plan = json.loads((slurm_sweeps["packed"].results / "packs" / "plan.json").read_text())["packs"]
    assert len(plan) == 4
    jobs = {}
    for rec in packed.values():
        run = f"{rec['study']}/{rec['config_id']}/rep{rec['repetition']}"
        pid = rec["pack"]["id"]
        assert plan[pid][rec["pack"]["index"]] == run and rec["pack"]["of"] == len(plan[pid]) == 2
        assert rec["scheduler"]["job_id"] == rec["slurm"]["job_id"] and rec["scheduler"]["restarts"] == 0
        jobs.setdefault(pid, set()).add(rec["slurm"]["job_id"])
    assert all(len(ids) == 1 for ids in jobs.values()) and len({i for ids in jobs.values() for i in ids}) == 4
    for p in (1, 2):
        packs = {rec["pack"]["id"] for rec in packed.values() if rec["parameters"]["p"] == p}
        assert len(packs) == 2  # the configuration's 2 repetitions (and its variants with them)
        for pid in packs:
            assert sorted(plan[pid]) == sorted(f"np@{v}/p={p}/rep{plan[pid][0][-1]}" for v in "ab")


def test_a_paired_measurement_runs_on_slurm_its_variants_back_to_back(slurm_sweeps):
    """Paired measurement (config key variants:, issue 43) on the cluster: every configuration's variants
    take adjacent places in each round's order and reach SLURM with adjacent nice values; the records
    name their variant; the sweep then models both and perfsweep compare judges the pairs."""
    sweep = slurm_sweeps["paired"]
    recs = list(finished(sweep).values())
    assert len(recs) == 2 * 3 and all(r["status"] == "ok" for r in recs)
    assert {r["variant"] for r in recs} == {"before", "after"} and all(r["study"] == f"s@{r['variant']}" for r in recs)
    by_place = sorted(recs, key=lambda r: (r["order"]["round"], r["order"]["position"]))
    for first, second in zip(by_place[::2], by_place[1::2]):  # each pair: one configuration's two variants
        assert (first["config_id"], first["repetition"]) == (second["config_id"], second["repetition"])
        assert {first["variant"], second["variant"]} == {"before", "after"}
    nice = [sweep.nice[r["slurm"]["job_id"]] for r in by_place]  # (scontrol show job once the sweeps ended)
    assert nice == sorted(nice) and len(set(nice)) == len(nice), nice
    out = subprocess.run([str(BIN / "perfsweep"), "compare", str(sweep.results), "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["paired"] and data["a"].endswith("(before)") and data["b"].endswith("(after)")
