"""The run order (config key seed:, perfsweep.sweep.order): every repetition round in a seeded random
order, recorded in the records; with the real Snakemake, the same seed runs the same order."""

import json

import pytest

from conftest import snakemake
from perfsweep import layout, tables
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.sweep.order import lookup, nice_values, priorities, run_order, write_orders

RUNS = [("s", f"n={n}", k) for n in range(1, 9) for k in range(3)] + [("t", f"m={m}", 0) for m in range(1, 4)]


def sequence(order):
    """The runs in the order the priorities run them."""
    prio = priorities(order)
    return sorted(prio, key=lambda r: -prio[r])


def test_the_same_seed_gives_the_same_order_and_another_seed_another():
    a, b, c = run_order(1, RUNS), run_order(1, list(reversed(RUNS))), run_order(2, RUNS)
    assert a == b
    assert sequence(a) == sequence(b)
    assert sequence(a) != sequence(c)
    assert {r: o["seed"] for r, o in c.items()} == {r: 2 for r in RUNS}


def test_rounds_stay_whole_and_each_is_shuffled():
    order = run_order(7, RUNS)
    seq = sequence(order)
    assert [r[2] for r in seq] == sorted(r[2] for r in seq)  # all of round k before round k + 1
    for k, size in ((0, 11), (1, 8), (2, 8)):
        members = [r for r in seq if r[2] == k]
        assert [order[r]["position"] for r in members] == list(range(size))
        assert {order[r]["of"] for r in members} == {size}
    first = [r[:2] for r in seq if r[2] == 0]
    assert first != sorted(first)  # not grid order (checked for seed 7)
    studies = [r[0] for r in first]
    assert studies != sorted(studies)  # the studies are interleaved too
    assert min(priorities(order).values()) >= 1
    nice = nice_values(priorities(order))
    assert nice[seq[0]] == 0 and [nice[r] for r in seq] == sorted(nice.values())


def test_an_added_point_keeps_the_others_order():
    before = sequence(run_order(3, RUNS))
    after = sequence(run_order(3, RUNS + [("s", "n=99", 0)]))
    assert [r for r in after if r != ("s", "n=99", 0)] == before


def test_the_runner_finds_a_runs_place_and_old_trees_have_none(tmp_path):
    results = tmp_path / "results"
    record = layout.record(results, "s", "n=1", 2)
    assert lookup(record) is None  # no order file: a record of a sweep before the order was recorded
    order = run_order(5, RUNS)
    write_orders(results, order)
    assert lookup(record) == order[("s", "n=1", 2)]
    assert lookup(layout.record(results, "s", "n=1", 9)) is None
    assert lookup(tmp_path / "elsewhere.json") is None


def test_seed_is_validated_and_defaults_to_one():
    base = {"app": {"command": "echo {n}"}, "parameters": {"n": 1}, "studies": {"s": {"vary": {"n": [1, 2]}}}}
    assert load_config(dict(base)).seed == 1
    assert load_config(dict(base, seed=42)).seed == 42
    with pytest.raises(ConfigError, match=r"c\.yaml.*seed.*-1"):
        load_config(dict(base, seed=-1), source="c.yaml")
    with pytest.raises(ConfigError, match=r"seed.*'x'"):
        load_config(dict(base, seed="x"), source="c.yaml")
    assert load_config(dict(base)).disturbed == 0.1
    with pytest.raises(ConfigError, match=r"c\.yaml: variability\.disturbed: 1\.5"):
        load_config(dict(base, variability={"disturbed": 1.5}), source="c.yaml")


def test_records_without_order_or_host_load_are_still_read(tmp_path):
    rec = {"schema": "perfsweep.run/1", "run_id": "s/n=1/rep0", "study": "s", "config_id": "n=1", "repetition": 0,
           "parameters": {"n": 1}, "status": "ok", "time": 1.0, "wall_time": 1.1}
    path = tmp_path / "runs" / "s" / "n=1" / "rep0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rec))
    runs, _, _ = tables.collect([str(path)])
    assert runs.loc[0, "order_position"] is None and runs.loc[0, "others_busy_share"] is None
    var = tables.variability(runs, ["n"], 0.1, 0.25)
    assert var.loc[0, "n_disturbed"] == 0


# ---- the real Snakemake


@pytest.mark.slow
def test_a_local_sweep_runs_and_records_the_seeds_order(own_app_doc_sweep, tmp_path):
    """The shared sweep of docs/how-to/own-app.md's example (tests/sweeps/own_app.py: 15 configurations x
    3 repetitions, default seed 1, every run holding every core, so they start one by one). The records
    say the runs ran round by round, each round in its recorded order, and that order is the one
    run_order draws from seed 1 for these runs: the same seed gives the same order in any sweep of them
    (run_order depends on nothing else, test_the_same_seed_gives_the_same_order_and_another_seed_another),
    and seed 2 another. (Until the suite's shared sweeps this test ran three sweeps of its own, seeds 1,
    1 and 2, and compared their records.)"""
    runs_dir = own_app_doc_sweep.results / "runs" / "atoms_p"
    recs = sorted((json.loads(p.read_text()) for p in runs_dir.glob("*/rep*.json")), key=lambda r: r["started_at"])
    assert len(recs) == 45 and all(r["status"] == "ok" for r in recs)
    ran = [(r["repetition"], r["config_id"], r["order"]) for r in recs]
    assert [k for k, _, _ in ran] == [0] * 15 + [1] * 15 + [2] * 15  # the rounds are kept
    assert [o["round"] for _, _, o in ran] == [0] * 15 + [1] * 15 + [2] * 15
    assert [o["position"] for _, _, o in ran] == list(range(15)) * 3  # ran in its recorded order
    assert {o["of"] for _, _, o in ran} == {15}
    assert [o["seed"] for _, _, o in ran] == [1] * 45
    ids = sorted({c for _, c, _ in ran})
    these = [("atoms_p", c, k) for c in ids for k in range(3)]
    in_order = [(k, c) for k, c, _ in ran]
    assert in_order == [(k, c) for _, c, k in sequence(run_order(1, these))]  # the same seed: the same order
    assert in_order != [(k, c) for _, c, k in sequence(run_order(2, these))]  # another seed: another
    grid = [f"atoms={a}_p={p}" for a in (10000, 20000, 40000, 80000, 160000) for p in (1, 2, 4)]
    assert sorted(grid) == ids and [c for _, c, _ in ran][:15] != grid  # not grid order
    # another seed orders only the runs still to be measured: it measures nothing again (on a copy)
    copy = own_app_doc_sweep.copy(tmp_path / "a")
    copy.write_config({**copy.config, "seed": 9})
    dry = snakemake("runs", "-n", "--cores", "2", "--configfile", copy.config_file, cwd=copy.work)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    runs, _, _ = tables.collect([str(p) for p in (copy.results / "runs" / "atoms_p").glob("*/rep*.json")])
    assert sorted(zip(runs["order_round"], runs["order_position"])) == [(k, i) for k in (0, 1, 2) for i in range(15)]
