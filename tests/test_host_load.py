"""What the host did during a run (record field host_load, perfsweep.sweep.host): a launch's CPU time
against wall x processes, its involuntary switches, the others' busy share of its cores from /proc/stat;
which runs the host disturbed (tables.disturbed_runs: others took more than variability.disturbed of the
cores a run needed); with the real Snakemake, a busy loop on one of the cores shows in the records,
tables and flags."""

import json
import os
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from conftest import snakemake
from perfsweep import tables
from perfsweep.sweep.host import HostWatch, busy_jiffies, rank_load

BUSY = "import sys, time\nt = time.time()\nwhile time.time() - t < float(sys.argv[1]):\n    pass\n"


def test_busy_jiffies_reads_the_cores_lines(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  50 0 20 900 5 0 0 0 0 0\n"
                    "cpu0 10 1 2 400 3 4 5 6 0 0\n"
                    "cpu1 40 0 18 500 2 0 0 0 0 0\n"
                    "intr 1 2 3\n")
    assert busy_jiffies([0], str(stat)) == 10 + 1 + 2 + 4 + 5 + 6  # idle and iowait are not busy
    assert busy_jiffies([0, 1], str(stat)) == 28 + 58
    assert busy_jiffies([0, 7], str(stat)) is None  # a core /proc/stat does not list
    assert busy_jiffies([0], str(tmp_path / "missing")) is None


def test_a_busy_child_counts_as_the_runs_own_cpu_time(tmp_path):
    watch = HostWatch.start()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", BUSY, "0.6"], check=True)
    load = watch.finish(time.perf_counter() - t0, 1)
    assert load["cpu_time"] >= 0.15  # it spun, on a core shared with the host's other work
    assert 0.15 <= load["cpu_wall_ratio"] <= 1.2
    assert load["involuntary_switches"] >= 0
    assert load["cores"] >= 1 and 0 <= load["others_busy_share"] <= 1
    quiet = HostWatch.start()
    time.sleep(0.3)  # nothing of ours runs: the run's own CPU time is (about) none
    assert quiet.finish(None, 1)["cpu_time"] < 0.05


def test_rank_load_names_the_rank_that_had_least_of_its_core():
    ranks = [{"rank": 0, "total": 2.0, "cpu_time": 1.9}, {"rank": 1, "total": 2.0, "cpu_time": 1.0}]
    assert rank_load(ranks) == {"min_cpu_wall_ratio": 0.5, "rank": 1}
    assert rank_load([{"rank": 0, "total": 1.0}]) is None and rank_load(None) is None


def test_the_tables_flag_runs_above_the_threshold():
    runs = pd.DataFrame({"config_id": ["a", "a", "a", "b"], "n": [1, 1, 1, 2], "status": ["ok"] * 4,
                         "time": [1.0, 1.1, 1.2, 2.0], "others_busy_share": [0.1, 0.5, 0.6, None],
                         "cpu_wall_ratio": [0.9, 0.5, 0.4, None]})
    var = tables.variability(runs, ["n"], 0.5, disturbed=0.25).set_index("config_id")
    assert var.loc["a", "n_disturbed"] == 2 and var.loc["b", "n_disturbed"] == 0
    assert var.loc["a", "others_busy_share"] == 0.5 and var.loc["a", "cpu_wall_ratio"] == 0.5
    assert pd.isna(var.loc["b", "others_busy_share"])
    # the study's progress line counts them and says whether they are measured again (measured until
    # decided measures its mostly disturbed configurations again; it said "not measured again" regardless)
    from perfsweep.stages.variability import progress_line
    said = progress_line("s", var.reset_index(), runs)
    assert "; 2 runs disturbed by other processes on their cores (flagged, not measured again)" in said, said
    said = progress_line("s", var.reset_index(), runs, remeasured=True)
    assert "(flagged, configurations with mostly disturbed runs measured again while the decide budget lasts)" in said
    assert tables.variability_summary(var.reset_index()).loc[0, "disturbed_runs"] == 2


def load_runs(*loads):
    """A runs table of one configuration per (others_busy_share, watched cores, processes)."""
    return pd.DataFrame({"config_id": [f"c{i}" for i in range(len(loads))], "n": range(len(loads)),
                         "status": ["ok"] * len(loads), "time": [1.0] * len(loads),
                         "others_busy_share": [x[0] for x in loads], "watched_cores": [x[1] for x in loads],
                         "load_processes": [x[2] for x in loads]})


def test_a_run_is_disturbed_where_others_took_the_cores_it_needed():
    # one core of two busy half of every second: others' share 0.25, 0.5 core-equivalents
    half = [(0.25, 2, 1), (0.25, 2, 2), (0.3, 2, 2), (0.25, 2, 4), (0.26, 2, 4)]
    assert tables.disturbed_runs(load_runs(*half), 0.25).tolist() == [
        False,  # p = 1: a core free for them
        False,  # p = 2: 0.5 core-equivalents > 0.25 x 2 is false (at the threshold, not beyond it)
        True,   # p = 2 with 0.6 core-equivalents
        False,  # oversubscribed: the others' share against the threshold, 0.25 > 0.25 false
        True]   # 0.26 > 0.25
    # p = 1 of 2 cores: the others take more than a quarter of its core beyond the free one
    one = [(0.6, 2, 1), (0.65, 2, 1), (1.0, 2, 1), (0.4, 4, 1), (0.85, 4, 2)]
    assert tables.disturbed_runs(load_runs(*one), 0.25).tolist() == [False, True, True, False, True]
    # unknown: no share (no host_load, or None) is not disturbed; no cores/processes: the share alone
    unknown = load_runs((None, 2, 1), (float("nan"), 2, 2), (0.3, None, None), (0.2, None, 1))
    assert tables.disturbed_runs(unknown, 0.25).tolist() == [False, False, True, False]
    assert not tables.disturbed_runs(load_runs((0.9, 2, 2)), None).any()  # no threshold: nothing flagged
    # 1: none (the others cannot take more than all of the cores a run needed)
    assert not tables.disturbed_runs(load_runs((1.0, 2, 1), (1.0, 2, 2), (1.0, 2, 4)), 1.0).any()
    # every table judges alike
    runs = load_runs(*half)
    assert tables.run_order(runs, ["n"], 0.25)["disturbed"].tolist() == [False, False, True, False, True]
    var = tables.variability(runs, ["n"], 0.5, 0.25).set_index("config_id")
    assert var["n_disturbed"].tolist() == [0, 0, 1, 0, 1]
    assert var["disturbed_ok_share"].tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_a_configuration_is_disturbed_where_most_of_its_successful_runs_were():
    runs = pd.DataFrame({"config_id": ["a"] * 3 + ["b"] * 4 + ["c"] * 2, "n": [1] * 3 + [2] * 4 + [3] * 2,
                         "status": ["ok", "ok", "failed", "ok", "ok", "ok", "ok", "ok", "ok"],
                         "time": [1.0, 1.0, None, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0],
                         "others_busy_share": [0.9, 0.1, 0.9, 0.9, 0.9, 0.1, 0.1, 0.95, 0.9],
                         "watched_cores": [2] * 9, "load_processes": [2] * 9})
    var = tables.variability(runs, ["n"], 0.5, 0.25).set_index("config_id")
    # a: one of its two successful runs (the failed one is not counted), b: two of four: not more than half
    assert var["disturbed_ok_share"].tolist() == [0.5, 0.5, 1.0] and var["n_disturbed"].tolist() == [2, 2, 2]
    agg = tables.aggregate(runs, pd.DataFrame(), pd.DataFrame(), ["n"], var.reset_index(), "keep-flagged",
                           disturbed=0.25)
    assert tables.busy_configurations(agg) == (["c"], 3)
    # validation points and oversubscribed configurations are not fitted: not counted
    assert tables.busy_configurations(agg.assign(validation=agg["config_id"] == "c")) == ([], 2)


def test_a_configurations_statistics_come_from_its_undisturbed_runs_where_it_has_any():
    # a: one run undisturbed, one disturbed (their median of two lay halfway to the busy host's time);
    # b: every run disturbed (its median is the busy host's: it stays, and says so); c: none disturbed
    runs = pd.DataFrame({"config_id": ["a", "a", "b", "b", "c", "c"], "n": [1, 1, 2, 2, 3, 3],
                         "run_id": ["a0", "a1", "b0", "b1", "c0", "c1"], "status": ["ok"] * 6,
                         "time": [1.0, 1.6, 2.0, 2.4, 3.0, 3.2],
                         "others_busy_share": [0.0, 0.3, 0.3, 0.4, 0.01, 0.02],
                         "watched_cores": [2] * 6, "load_processes": [2] * 6})
    ranks = pd.DataFrame({"config_id": ["a", "a", "b", "b", "c", "c"], "run_id": ["a0", "a1", "b0", "b1", "c0", "c1"],
                          "compute": [0.9, 1.5, 1.9, 2.3, 2.9, 3.1]})
    assert tables.undisturbed_where_any(runs, 0.1).tolist() == [True, False, True, True, True, True]
    var = tables.variability(runs, ["n"], 0.5, 0.1)
    agg = tables.aggregate(runs, ranks, pd.DataFrame(), ["n"], var, "keep-flagged", disturbed=0.1)
    time_ = agg[agg["metric"] == "time"].set_index("config_id")
    assert time_["median"].tolist() == [1.0, 2.2, 3.1] and time_["n_ok"].tolist() == [1, 2, 2]
    assert time_.loc["a", "values"] == "1.0"  # the models fit the repetitions' values: the undisturbed one
    compute = agg[agg["metric"] == "compute"].set_index("config_id")
    assert compute["median"].tolist() == pytest.approx([0.9, 2.1, 3.0])  # the ranks' phases alike
    # the host load still counts every run: a's runs are not mostly disturbed, b's are
    assert time_["n_disturbed"].tolist() == [1, 2, 0] and time_["disturbed_ok_share"].tolist() == [0.5, 1.0, 0.0]
    # the medians table says why a's median comes from 1 of its 2 runs
    med = tables.medians_wide(agg, ["n"]).set_index("config_id")
    assert med[["n_ok", "n_runs", "n_disturbed"]].values.tolist() == [[1, 2, 1], [2, 2, 2], [2, 2, 0]]
    assert tables.busy_configurations(agg) == (["b"], 3)
    # no threshold, or none disturbed under it: every run
    assert tables.undisturbed_where_any(runs, None).all() and tables.undisturbed_where_any(runs, 1.0).all()
    # a paired measurement's variant keeps every run: its runs pair with the other variants' by round
    assert tables.undisturbed_where_any(runs.assign(study="s@after"), 0.1).all()
    assert not tables.undisturbed_where_any(runs.assign(study="s"), 0.1).all()


def test_the_others_share_is_what_the_cores_did_beyond_the_run(monkeypatch):
    """others_busy_share from the cores' busy jiffies (/proc/stat's counts, given here) less the run's own
    CPU time: a quiet host's cores busy with the run alone give (about) 0, a busy loop on one of the
    two cores besides adds half their capacity. (The real-load sweep below asserts what a loop does on
    this host; a quiet host to compare it with is what a shared host cannot promise, so the comparison
    is made on known counts.)"""
    from perfsweep.sweep import host

    tick = os.sysconf("SC_CLK_TCK")
    monkeypatch.setattr(host, "watched_cores", lambda: [0, 1])
    shares = {}
    for name, others in (("quiet", 0.0), ("loop", 1.0)):  # the others' busy core-seconds over 1 s of wall
        counts = iter([10_000, 10_000 + round((0.9 + others) * tick)])  # the run's 0.9 s, the others'
        monkeypatch.setattr(host, "busy_jiffies", lambda cores, counts=counts: next(counts))
        watch = host.HostWatch.start()
        shares[name] = watch.finish(1.0, 1, ranks_cpu=0.9)["others_busy_share"]
    assert shares["quiet"] == 0.0  # the run's own time is not the others' (at least 0)
    assert shares["loop"] == pytest.approx(0.5, abs=0.02)  # less the test's own CPU time since start()
    assert shares["loop"] >= shares["quiet"] + 0.15


# ---- the real Snakemake with a real load


def sweep(tmp_path, disturbed=0.25):
    """A small study of a single-process app that computes for 0.7-0.9 s; returns its records' host_load
    and its aggregate table."""
    tmp_path.mkdir()
    app = tmp_path / "busy.py"
    app.write_text(BUSY)
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} {app} {{t}}"},
        "parameters": {"t": 0.8},
        "studies": {"s": {"vary": {"t": [0.7, 0.8, 0.9]}}},
        "repetitions": 1,
        "variability": {"disturbed": disturbed},
        "results": str(tmp_path / "results"),
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake(tmp_path / "results" / "tables" / "s" / "aggregate.csv", "--cores", "2", "--configfile", path, cwd=tmp_path)
    recs = [json.loads(p.read_text()) for p in sorted((tmp_path / "results" / "runs" / "s").glob("*/rep0.json"))]
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs)
    return [r["host_load"] for r in recs], pd.read_csv(tmp_path / "results" / "tables" / "s" / "aggregate.csv")


@pytest.mark.slow
@pytest.mark.timing
def test_a_busy_loop_on_one_core_shows_in_the_records(tmp_path):
    """A sweep of its own (its shape is the test: a busy loop on a core for the whole sweep). It asserts
    only what the host's other work cannot flip: that work can only add to the others' share, so the
    loop's core (half of two) keeps each run's share above 0.35; the flags follow the records by
    tables.disturbed_runs' rule, whatever the shares were. It measures once and never more. (Until the
    suite's shared sweeps it also ran a quiet sweep and compared, skipping that comparison where the
    host was busy without the loop; the comparison is test_the_others_share_is_what_the_cores_did_beyond_the_run.)"""
    loop = subprocess.Popen([sys.executable, "-c", BUSY, "600"])  # keeps one core busy until stopped
    try:
        time.sleep(0.5)
        loaded, agg = sweep(tmp_path / "loaded")
    finally:
        loop.kill()
        loop.wait()
    share = sorted(h["others_busy_share"] for h in loaded)[1]  # the median of three
    # one of the two cores busy with the loop: about half their capacity (more with the host's own work)
    assert share >= 0.35, loaded
    assert all(h["cpu_time"] > 0.1 and h["processes"] == 1 and h["cores"] >= 1 for h in loaded)
    assert {"others_busy_share", "cpu_wall_ratio", "n_disturbed"} <= set(agg.columns)
    time_rows = agg[(agg["region"] == "all") & (agg["metric"] == "time")]
    assert (time_rows["others_busy_share"] >= 0.25).sum() >= 2
    # flagged as the rule says (tables.disturbed_runs): the loop on one core leaves a single-process run
    # the other one, so it is disturbed only where the others kept more than 1.25 of the 2 cores busy
    rule = sum(h["others_busy_share"] * h["cores"] - max(h["cores"] - 1, 0) > 0.25 for h in loaded)
    assert time_rows["n_disturbed"].sum() == rule, loaded


def test_the_ranks_own_cpu_time_stands_in_where_they_are_not_the_runners_children():
    ranks = [{"rank": 0, "host": "h", "total": 1.0, "cpu_time": 0.9}, {"rank": 1, "host": "other", "cpu_time": 5.0}]
    from perfsweep.sweep.host import ranks_cpu_here

    assert ranks_cpu_here(ranks, "h") == 0.9 and ranks_cpu_here(ranks, "x") is None
    watch = HostWatch.start()
    time.sleep(0.2)
    srun = watch.finish(0.2, 1, descendants=False)  # srun's ranks, nothing reported: not known
    assert srun["cpu_wall_ratio"] is None and srun["others_busy_share"] is None
    reported = watch.finish(1.0, 1, ranks_cpu=0.9, descendants=False)
    assert reported["cpu_source"] == "ranks" and reported["cpu_wall_ratio"] == pytest.approx(0.9)
    assert reported["others_busy_share"] is not None
