import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from perfsweep.metrics.mdanalysis_import import read_mdanalysis
from perfsweep.metrics.observables import add_overheads, run_totals
from perfsweep.metrics.pop import pop_metrics
from perfsweep.metrics.scaling import scaling_table
from perfsweep.metrics.stragglers import flag_stragglers

MDA = REPO.parent / "shared" / "reference-data" / "mdanalysis-rmsd"


def ranks_table(rows):
    return pd.DataFrame(rows, columns=["run_id", "p", "rank", "compute", "comm", "total"])


def test_balanced_run_has_load_balance_one():
    df = ranks_table([("r", 4, k, 8.0, 2.0, 10.0) for k in range(4)])
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    assert m["Load Balance"] == 1.0
    assert m["Communication Efficiency"] == pytest.approx(0.8)
    assert m["Parallel Efficiency"] == pytest.approx(0.8)


def test_one_slow_rank():
    # three ranks compute 6 s, one computes 12 s; the run takes 13 s
    df = ranks_table([("r", 4, 0, 6.0, 7.0, 13.0), ("r", 4, 1, 6.0, 7.0, 13.0), ("r", 4, 2, 6.0, 7.0, 13.0),
                      ("r", 4, 3, 12.0, 1.0, 13.0)])
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    assert m["Load Balance"] == pytest.approx(7.5 / 12)
    assert m["Communication Efficiency"] == pytest.approx(12 / 13)
    assert m["Parallel Efficiency"] == pytest.approx(7.5 / 13)
    assert m["Parallel Efficiency"] == pytest.approx(m["Load Balance"] * m["Communication Efficiency"])
    tn = pd.DataFrame({"run": "r", "rank": range(8), "t_N": [10, 10.1, 9.9, 10, 10.05, 9.95, 10, 14.0]})
    flagged = flag_stragglers(tn, ["run"])
    assert list(flagged["rank"][flagged["straggler"]]) == [7]


def test_no_stragglers_in_even_jitter():
    tn = pd.DataFrame({"run": "r", "rank": range(8), "t_N": 10 + 0.01 * np.arange(8)})
    assert not flag_stragglers(tn, ["run"])["straggler"].any()


@pytest.mark.parametrize("scaling, expected", [("strong", 16.0 / 20.0), ("weak", 8.0 / 5.0)])
def test_computation_scaling_and_global_efficiency(scaling, expected):
    df = ranks_table([("a", 2, 0, 8.0, 1.0, 9.0), ("a", 2, 1, 8.0, 1.0, 9.0)]
                     + [("b", 4, k, 5.0, 2.0, 7.0) for k in range(4)])
    m = pop_metrics(df, ["run_id"], "p", scaling=scaling).set_index("run_id")
    assert m.loc["a", "Computation Scaling"] == pytest.approx(1.0)
    assert m.loc["b", "Computation Scaling"] == pytest.approx(expected)
    assert m.loc["b", "Global Efficiency"] == pytest.approx(m.loc["b", "Parallel Efficiency"] * expected)


def test_hybrid_thread_efficiency():
    df = ranks_table([("r", 2, k, 8.0, 1.0, 10.0) for k in range(2)])
    df["threads"] = 2
    df["thread_useful_sum"] = [14.0, 12.0]  # of 2 threads x 10 s each
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    assert m["MPI Parallel Efficiency"] == pytest.approx(0.9)
    assert m["Hybrid Parallel Efficiency"] == pytest.approx(26 / 40)
    assert m["Thread Parallel Efficiency"] == pytest.approx((26 / 40) / 0.9)


def test_speedup_reference_not_one_rank_is_flagged():
    runs = pd.DataFrame({"N": [2, 2, 4, 4], "t_total": [10.0, 10.0, 6.0, 6.0]})
    t = scaling_table(runs, "N").set_index("N")
    assert t.loc[4, "speed_up"] == pytest.approx(10 / 6) and t.loc[4, "efficiency"] == pytest.approx(10 / 6 / 2)
    assert t.loc[4, "reference"] == "relative to 2 ranks"


def test_mdanalysis_speedup_matches_published_column():
    ranks = add_overheads(read_mdanalysis(MDA))
    assert len(ranks) == 1805 and ranks.isna().sum().sum() == 0
    runs = run_totals(ranks, ["N", "repeat"])
    ours = scaling_table(runs, "N").set_index("N")
    theirs = pd.read_csv(MDA / "Fig3_a_df7-comm-updated-rmsd.csv").set_index("blocks")
    assert list(ours.index) == list(theirs.index)
    for n in ours.index:
        assert round(ours.loc[n, "speed_up"], 3) == round(theirs.loc[n, "speed_up"], 3), n
        assert ours.loc[n, "t_total_mean"] == pytest.approx(theirs.loc[n, "t_tot_max"], rel=1e-9)
    assert ours.loc[1, "reference"] == "1 rank"
    # overheads as the seed defines them
    r = ranks.iloc[0]
    assert r["t_Overhead1"] == pytest.approx(r["t_all_frame"] - r["t_IO"] - r["t_comp"] - r["t_end_loop"])


@pytest.mark.slow
def test_paper_mdanalysis_target(tmp_path):
    import yaml

    from conftest import snakemake

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["results"] = str(tmp_path / "results")
    cfg["paper"] = {"mdanalysis_dir": str(MDA)}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake("paper_mdanalysis", "--cores", "1", "--configfile", tmp_path / "c.yaml", cwd=tmp_path)
    out = tmp_path / "results" / "paper" / "mdanalysis-rmsd"
    table = pd.read_csv(out / "scaling.csv")
    assert list(table["N"]) == [1, 8, 16, 24, 32, 40, 48, 56, 64, 72]
    for name in ("speedup_efficiency", "components", "ranks_N72"):
        assert (out / f"{name}.png").exists() and (out / f"{name}.csv").exists()
    assert {"ideal_speed_up", "efficiency"} <= set(pd.read_csv(out / "speedup_efficiency.csv").columns)
