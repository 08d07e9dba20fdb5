"""The run order (config key seed:, perfsweep.sweep.order): every repetition round in a seeded random
order, recorded in the records; with the real Snakemake, the same seed runs the same order."""

import json
import sys

import pytest
import yaml

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

APP = "import time; time.sleep(0.05); print('ok')"
NS = (1, 2, 3, 4, 5, 6)


def sweep_order(tmp_path, seed):
    """Run a small study (6 configurations x 2 repetitions) with ``seed``; returns the runs as the
    records say they ran: [(repetition, config id, order entry)] by start time."""
    cfg = {
        "app": {"command": f"{{launcher}} {sys.executable} -c \"{APP}\" {{n}}"},
        "parameters": {"n": 1},
        "studies": {"s": {"vary": {"n": list(NS)}}},
        "repetitions": 2,
        "seed": seed,
        "results": str(tmp_path / "results"),
    }
    tmp_path.mkdir()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    records = [tmp_path / "results" / "runs" / "s" / f"n={n}" / f"rep{k}.json" for n in NS for k in range(2)]
    snakemake(*records, "--cores", "2", "--configfile", path, cwd=tmp_path)
    recs = sorted((json.loads(p.read_text()) for p in records), key=lambda r: r["started_at"])
    assert all(r["status"] == "ok" for r in recs)
    return [(r["repetition"], r["config_id"], r["order"]) for r in recs]


@pytest.mark.slow
def test_a_local_sweep_runs_and_records_the_seeds_order(tmp_path):
    first = sweep_order(tmp_path / "a", 1)
    again = sweep_order(tmp_path / "b", 1)
    other = sweep_order(tmp_path / "c", 2)
    for ran in (first, again, other):
        assert [k for k, _, _ in ran] == [0] * 6 + [1] * 6  # the rounds are kept
        assert [o["round"] for _, _, o in ran] == [0] * 6 + [1] * 6
        assert [o["position"] for _, _, o in ran] == list(range(6)) * 2  # ran in its recorded order
        assert {o["of"] for _, _, o in ran} == {6}
    assert [o["seed"] for _, _, o in first] == [1] * 12 and [o["seed"] for _, _, o in other] == [2] * 12
    assert [c for _, c, _ in first] == [c for _, c, _ in again]  # the same seed: the same order
    assert [c for _, c, _ in first] != [c for _, c, _ in other]  # another seed: another
    assert [c for _, c, _ in first][:6] != [f"n={n}" for n in NS]  # not grid order
    # another seed orders only the runs still to be measured: it measures nothing again
    cfg = yaml.safe_load((tmp_path / "a" / "c.yaml").read_text())
    (tmp_path / "a" / "c.yaml").write_text(yaml.safe_dump({**cfg, "seed": 9}, sort_keys=False))
    dry = snakemake("runs", "-n", "--cores", "2", "--configfile", tmp_path / "a" / "c.yaml", cwd=tmp_path / "a")
    assert "Nothing to be done" in dry.stdout + dry.stderr
    runs, _, _ = tables.collect([str(p) for p in (tmp_path / "a" / "results" / "runs" / "s").glob("*/rep*.json")])
    assert sorted(zip(runs["order_round"], runs["order_position"])) == [(k, i) for k in (0, 1) for i in range(6)]
