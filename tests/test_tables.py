import numpy as np
import pandas as pd
import pytest

from perfsweep import tables
from perfsweep.atomic import write_json_atomic


def record(cid, n, rep, time, status="ok", ranks=None):
    return {
        "schema": "perfsweep.run/1", "run_id": f"s/{cid}/rep{rep}", "study": "s", "config_id": cid, "repetition": rep,
        "parameters": {"n": n, "p": 2}, "status": status, "error": None if status == "ok" else "x",
        "time": time if status == "ok" else None, "wall_time": 1.0,
        "ranks": ranks if ranks is not None else [
            {"rank": 0, "init": 0.1, "compute": time * 0.5, "io": 0.01, "comm": 0.2, "other": 0, "total": time,
             "comm_ops": {"Allreduce": 0.2}, "regions": {"step": {"time": 0.7, "visits": 3}}},
            {"rank": 1, "init": 0.1, "compute": time * 0.8, "io": 0.0, "comm": 0.1, "other": 0, "total": time,
             "comm_ops": {"Allreduce": 0.1}, "regions": {"step": {"time": 0.9, "visits": 3}}},
        ],
    }


@pytest.fixture
def collected(tmp_path):
    recs = [record("n=1", 1, 0, 1.0), record("n=1", 1, 1, 1.1), record("n=1", 1, 2, 0.9),
            record("n=2", 2, 0, 2.0), record("n=2", 2, 1, 3.0), record("n=2", 2, 2, 0, status="failed", ranks=[])]
    paths = []
    for i, r in enumerate(recs):
        p = tmp_path / f"{i}.json"
        write_json_atomic(p, r)
        paths.append(p)
    return tables.collect(paths)


def test_collect_tidy_shapes(collected):
    runs, ranks, regions = collected
    assert len(runs) == 6 and list(runs["n"]) == [1, 1, 1, 2, 2, 2]
    assert len(ranks) == 10 and set(ranks["rank"]) == {0, 1}  # the failed run has no ranks
    assert "comm_Allreduce" in ranks and len(regions) == 10 and set(regions["region"]) == {"step"}


def test_variability_cv_and_flag(collected):
    runs = collected[0]
    var = tables.variability(runs, ["n"], cv_threshold=0.2).set_index("config_id")
    assert var.loc["n=1", "cv"] == pytest.approx(np.std([1.0, 1.1, 0.9], ddof=1) / 1.0)
    assert var.loc["n=2", "cv"] == pytest.approx(np.std([2.0, 3.0], ddof=1) / 2.5)
    assert var.loc["n=2", "n_ok"] == 2 and var.loc["n=2", "n_failed"] == 1
    assert list(var["flagged"]) == [False, True]


@pytest.mark.parametrize("policy, kept", [("keep-flagged", {"n=1", "n=2"}), ("drop", {"n=1"})])
def test_aggregate_policies_and_max_over_ranks(collected, policy, kept):
    runs, ranks, regions = collected
    var = tables.variability(runs, ["n"], cv_threshold=0.2)
    agg = tables.aggregate(runs, ranks, regions, ["n"], var, policy)
    assert set(agg["config_id"]) == kept
    t = agg[(agg.region == "all") & (agg.metric == "time")].set_index("config_id")
    assert t.loc["n=1", "median"] == pytest.approx(1.0) and t.loc["n=1", "n_ok"] == 3
    assert t.loc["n=1", "min"] == pytest.approx(0.9) and t.loc["n=1", "n_runs"] == 3
    comp = agg[(agg.region == "all") & (agg.metric == "compute")].set_index("config_id")
    assert comp.loc["n=1", "median"] == pytest.approx(0.8)  # max over ranks, then median over reps
    step = agg[(agg.region == "step")].set_index("config_id")
    assert step.loc["n=1", "median"] == pytest.approx(0.9)
    if "n=2" in kept:
        assert t.loc["n=2", "median"] == pytest.approx(2.5) and bool(t.loc["n=2", "flagged"])
        assert t.loc["n=2", "n_ok"] == 2 and t.loc["n=2", "n_runs"] == 3


def test_markdown_and_latex(tmp_path):
    df = pd.DataFrame({"a_b": [1, 2], "v": [0.5, np.nan]})
    stem = tmp_path / "t"
    tables.write_table(df, str(stem), caption="x")
    assert (tmp_path / "t.md").read_text().splitlines()[2] == "| 1 | 0.5 |"
    tex = (tmp_path / "t.tex").read_text()
    assert r"a\_b & v \\" in tex and r"\toprule" in tex
    assert pd.read_csv(tmp_path / "t.csv").shape == (2, 2)


def test_variability_rows_follow_the_grid_not_the_text_order_of_the_records():
    ids = ["n=100", "n=1600", "n=200", "n=400"]  # the order of the record paths (text)
    runs = pd.DataFrame({"config_id": [c for c in ids for _ in range(2)], "n": [int(c[2:]) for c in ids for _ in range(2)],
                         "status": "ok", "time": [1.0, 1.1] * 4})
    assert list(tables.variability(runs, ["n"], 0.1)["config_id"]) == ["n=100", "n=200", "n=400", "n=1600"]
