import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from perfsweep.metrics.mdanalysis_import import read_mdanalysis
from perfsweep.metrics.observables import add_overheads, from_pipeline_ranks, repetition_stats, run_totals
from perfsweep.metrics.pop import detect_scaling, pop_metrics, pop_table
from perfsweep.metrics.scaling import scaling_table
from perfsweep.metrics.stragglers import flag_stragglers

MDA = REPO / "resources" / "reference-data" / "mdanalysis-rmsd"


def ranks_table(rows):
    return pd.DataFrame(rows, columns=["run_id", "p", "rank", "compute", "comm", "total"])


def test_balanced_run_has_load_balance_one():
    df = ranks_table([("r", 4, k, 8.0, 2.0, 10.0) for k in range(4)])
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    assert m["Load Balance"] == 1.0
    assert m["Communication Efficiency"] == pytest.approx(0.8)
    assert m["Parallel Efficiency"] == pytest.approx(0.8)


def test_one_slow_rank():
    # 8 ranks, a Gather to rank 0 at the end (as in the rmsd app): ranks 1-6 compute 6 s and leave
    # the Gather after 0.2 s; rank 7 computes 12 s; the root waits for it (comm 6.4 s) and ends last.
    rows = [("r", 8, 0, 6.0, 6.4, 12.4)] + [("r", 8, k, 6.0, 0.2, 6.2) for k in range(1, 7)]
    rows.append(("r", 8, 7, 12.0, 0.2, 12.2))
    df = ranks_table(rows)
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    mean_comp = (7 * 6.0 + 12.0) / 8  # 6.75
    assert m["runtime"] == 12.4
    assert m["Load Balance"] == pytest.approx(mean_comp / 12.0)
    assert m["Communication Efficiency"] == pytest.approx(12.0 / 12.4)
    assert m["Parallel Efficiency"] == pytest.approx(mean_comp / 12.4)
    assert m["Parallel Efficiency"] == pytest.approx(m["Load Balance"] * m["Communication Efficiency"])
    assert np.isnan(m["MPI Parallel Efficiency"])  # pure MPI: no hybrid rows
    obs = from_pipeline_ranks(df)
    busy = flag_stragglers(obs, ["run_id"], t_col="t_busy")
    assert list(busy["rank"][busy["straggler"]]) == [7]
    # by t_N the waiting root stands out too (documented in perfsweep.metrics.stragglers)
    by_tn = flag_stragglers(obs, ["run_id"])
    assert list(by_tn["rank"][by_tn["straggler"]]) == [0, 7]


def test_straggler_rule_uses_mad_and_minimum_excess():
    tn = pd.DataFrame({"run": "r", "rank": range(8), "t_N": [10, 10.1, 9.9, 10, 10.05, 9.95, 10, 14.0]})
    flagged = flag_stragglers(tn, ["run"])
    assert list(flagged["rank"][flagged["straggler"]]) == [7]
    # median 10, MAD 0.05: k = 3 puts the robust bound at 10.22, the 5 % excess at 10.5
    assert flagged["straggler_threshold"].iloc[0] == pytest.approx(10.5)
    assert flag_stragglers(tn, ["run"], min_excess=0.0)["straggler_threshold"].iloc[0] == pytest.approx(
        10 + 3 * 1.4826 * 0.05)
    # a rank 4.5 % slow is not flagged with the default 5 % minimum, but is with 4 %
    tn2 = tn.assign(t_N=[10, 10.01, 9.99, 10, 10, 10, 10, 10.45])
    assert not flag_stragglers(tn2, ["run"])["straggler"].any()
    assert list(flag_stragglers(tn2, ["run"], min_excess=0.04)["straggler"]).count(True) == 1


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


def test_hybrid_hierarchies_both_multiply_to_parallel_efficiency():
    # 2 ranks x 2 threads, runtime 10 s, 1 s in MPI per rank; thread useful times 8, 6 | 7, 5
    df = ranks_table([("r", 2, k, 8.0, 1.0, 10.0) for k in range(2)])
    df["threads"] = 2
    df["thread_useful_sum"] = [14.0, 12.0]
    df["thread_useful_max"] = [8.0, 7.0]
    m = pop_metrics(df, ["run_id"], "p").iloc[0]
    assert m["Parallel Efficiency"] == pytest.approx(26 / 40)
    assert m["Load Balance"] == pytest.approx(6.5 / 8)
    assert m["Communication Efficiency"] == pytest.approx(8 / 10)
    assert m["MPI Parallel Efficiency"] == pytest.approx(0.9)
    assert m["Thread Parallel Efficiency"] == pytest.approx((26 / 40) / 0.9)
    assert m["Parallel Efficiency"] == pytest.approx(m["Load Balance"] * m["Communication Efficiency"])
    assert m["Parallel Efficiency"] == pytest.approx(m["MPI Parallel Efficiency"] * m["Thread Parallel Efficiency"])


def test_detect_scaling_from_the_design():
    grid = pd.DataFrame([(n, p) for n in (400, 800) for p in (1, 2, 4)], columns=["n", "p"])
    assert detect_scaling(grid, "p") == "strong"
    diagonal = pd.DataFrame({"n": [1000, 2000, 4000], "m": [3, 3, 3], "p": [1, 2, 4]})
    assert detect_scaling(diagonal, "p") == "weak"
    assert detect_scaling(diagonal, "p", size_cols=["m"]) == "strong"
    assert detect_scaling(pd.DataFrame({"n": [1000, 2000], "p": [2, 2]}), "p") == "strong"  # one p


def test_pop_table_median_spread_and_order():
    df = ranks_table([("a0", 4, k, 5.0, 1.0, 7.0) for k in range(4)] + [("a1", 4, k, 5.0, 1.0, 6.0) for k in range(4)]
                     + [("b0", 2, k, 8.0, 1.0, 10.0) for k in range(2)] + [("b1", 2, k, 8.0, 1.0, 9.0) for k in range(2)])
    df["config_id"] = df["run_id"].str[0]
    per_run = pop_metrics(df, ["run_id", "config_id", "p"], "p")
    table, spread = pop_table(per_run, ["p"], "p")
    assert list(table.columns) == ["p=2", "p=4"]
    assert [i.strip() for i in table.index] == ["Global Efficiency", "Parallel Efficiency", "Load Balance",
                                                "Communication Efficiency", "Computation Scaling"]
    assert table.index[2] == "    Load Balance"  # indented by level
    assert table.loc["  Parallel Efficiency", "p=4"] == pytest.approx(np.median([5 / 7, 5 / 6]))
    assert spread.loc["  Parallel Efficiency", "p=4"] == pytest.approx(5 / 6 - 5 / 7)
    assert spread.loc["    Load Balance", "p=2"] == 0.0


def test_pipeline_ranks_with_rmsd_regions_give_both_overheads():
    ranks = pd.DataFrame({"run_id": ["r", "r"], "rank": [0, 1], "init": [0.1, 0.1], "compute": [2.0, 2.5],
                          "io": [1.0, 0.5], "comm": [0.5, 0.0], "other": [0.05, 0.05], "total": [3.7, 3.1]})
    regions = pd.DataFrame({"run_id": "r", "rank": [0, 0, 0, 0, 1, 1, 1, 1, 1],
                            "region": ["block_rmsd", "block_rmsd/opening", "block_rmsd/frames",
                                       "block_rmsd/frames/end_loop"] * 2 + ["step/forces"],
                            "time": [3.2, 0.1, 3.05, 0.01, 3.1, 0.1, 3.0, 0.02, 9.9]})
    obs = from_pipeline_ranks(ranks, regions)
    assert obs["t_Overhead1"].tolist() == pytest.approx([3.05 - 1.0 - 2.0 - 0.01, 3.0 - 0.5 - 2.5 - 0.02])
    assert obs["t_Overhead2"].tolist() == pytest.approx([3.2 - 3.05 - 0.1, 3.1 - 3.0 - 0.1])
    assert obs["t_N"].tolist() == [3.7, 3.1] and obs["t_comp"].tolist() == [2.0, 2.5]
    assert obs["comp_over_comm"].iloc[0] == pytest.approx(4.0) and np.isnan(obs["comp_over_comm"].iloc[1])
    runs = run_totals(obs, ["run_id"])
    assert runs["t_total"].iloc[0] == 3.7 and runs["t_Overhead1_max"].iloc[0] == pytest.approx(0.04)
    assert runs["comp_over_comm"].iloc[0] == pytest.approx(2.25 / 0.25)


def test_repetition_stats():
    runs = pd.DataFrame({"p": [1, 1, 1, 1, 2], "t_total": [4.0, 1.0, 3.0, 2.0, 5.0]})
    s = repetition_stats(runs, ["p"], ["t_total"]).set_index("p")
    assert s.loc[1, "t_total_median"] == 2.5 and s.loc[1, "t_total_min"] == 1.0 and s.loc[1, "t_total_max"] == 4.0
    assert s.loc[1, "t_total_iqr"] == pytest.approx(3.25 - 1.75) and s.loc[1, "n"] == 4
    assert s.loc[2, "t_total_iqr"] == 0.0


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
        # std_S = S sqrt((s_1/T_1)^2 + (s_N/T_N)^2): the spread of T(1) counts too (0.0143 at N = 1)
        assert ours.loc[n, "speed_up_std"] == pytest.approx(theirs.loc[n, "std_S"], rel=1e-9), n
    assert ours.loc[1, "reference"] == "1 rank"
    # overheads as the seed defines them
    r = ranks.iloc[0]
    assert r["t_Overhead1"] == pytest.approx(r["t_all_frame"] - r["t_IO"] - r["t_comp"] - r["t_end_loop"])


@pytest.mark.slow
def test_paper_mdanalysis_target(tmp_path):
    """The paper target of its own Snakemake start: it reads the published MDAnalysis data and runs no
    benchmark, so no shared sweep holds what it makes."""
    from conftest import run_paper_target

    out = run_paper_target("paper_mdanalysis", tmp_path, mdanalysis_dir=MDA) / "paper" / "mdanalysis-rmsd"
    table = pd.read_csv(out / "scaling.csv")
    assert list(table["N"]) == [1, 8, 16, 24, 32, 40, 48, 56, 64, 72]
    for name in ("speedup_efficiency", "components", "ranks_N72"):
        assert (out / f"{name}.png").exists() and (out / f"{name}.csv").exists()
    assert {"ideal_speed_up", "efficiency"} <= set(pd.read_csv(out / "speedup_efficiency.csv").columns)


def test_pop_colours_and_figures_with_data_beside(tmp_path):
    from perfsweep.metrics.pop import colour
    from perfsweep.plots.metrics import pop_heatmap, rank_bars, speedup_efficiency

    red, pink_low, pink_high, green = colour(0.3), colour(0.55), colour(0.75), colour(0.9)
    assert red[0] > red[1] + 0.5 and green[1] > green[0] + 0.3  # red is red, green is green
    assert pink_low != pink_high and colour(0.8) == green and colour(float("nan")) == (0.9, 0.9, 0.9)
    df = ranks_table([("a", 1, 0, 8.0, 0.0, 8.5)] + [("b", 2, k, 4.0 + k, 0.5, 5.6) for k in range(2)])
    df["config_id"] = df["run_id"]
    table, _ = pop_table(pop_metrics(df, ["run_id", "config_id", "p"], "p"), ["p"], "p")
    pop_heatmap(table, tmp_path / "pop.png", "test")
    back = pd.read_csv(tmp_path / "pop.csv").set_index("metric")
    assert (tmp_path / "pop.png").stat().st_size > 1000
    assert back.loc["    Load Balance", "p=2"] == pytest.approx(4.5 / 5.0)
    runs = run_totals(from_pipeline_ranks(df), ["run_id", "p"])
    st = scaling_table(runs, "p", stat="median")
    speedup_efficiency(st, "p", tmp_path / "s.png", "test")
    plotted = pd.read_csv(tmp_path / "s.csv").set_index("p")
    assert plotted.loc[2, "speed_up"] == pytest.approx(8.5 / 5.6) and plotted.loc[2, "ideal_speed_up"] == 2
    one = flag_stragglers(from_pipeline_ranks(df[df["run_id"] == "b"]).assign(other=0.1), ["run_id"])
    rank_bars(one, ["compute", "comm", "other"], tmp_path / "r.png", "test", "straggler")
    assert list(pd.read_csv(tmp_path / "r.csv")["compute"]) == [4.0, 5.0]


def test_an_app_without_per_rank_timings_gets_speed_up_and_efficiency_of_its_run_times(tmp_path):
    from perfsweep.stages import metrics

    runs = pd.DataFrame({"run_id": [f"s/p={p}/rep{k}" for p in (1, 2, 4) for k in range(2)],
                         "config_id": [f"p={p}" for p in (1, 2, 4) for _ in range(2)],
                         "p": [1, 1, 2, 2, 4, 4], "status": ["ok", "ok", "ok", "failed", "ok", "ok"],
                         "time": [8.0, 8.2, 4.0, None, 2.5, 2.5]})
    runs.to_csv(tmp_path / "runs.csv", index=False)
    for name in ("ranks.csv", "regions.csv"):
        (tmp_path / name).write_text("")  # the collect stage's tables of an app without timings_json
    out = {k: tmp_path / name for k, name in (  # the rule's file names (pop.png's data would be pop.csv)
        ("observables", "observables.csv"), ("scaling", "scaling.csv"), ("pop_csv", "pop.csv"),
        ("pop_spread", "pop_spread.csv"), ("pop_figure", "pop.png"), ("speedup_figure", "speedup_efficiency.png"),
        ("ranks_figure", "ranks.png"))}
    metrics.run(tmp_path / "runs.csv", tmp_path / "ranks.csv", tmp_path / "regions.csv", **out,
                varied=["p"], processes="p", scaling_mode="auto", study="s")
    table = pd.read_csv(out["scaling"]).set_index("p")
    np.testing.assert_allclose(table["speed_up"], [1.0, 8.1 / 4.0, 8.1 / 2.5])  # medians of the good runs
    np.testing.assert_allclose(table["efficiency"], [1.0, 8.1 / 8.0, 8.1 / 10.0])
    assert table["repetitions"].tolist() == [2, 1, 2]
    assert out["speedup_figure"].stat().st_size > 0
    for key in ("observables", "pop_csv", "pop_spread"):  # pop.png's placeholder does not empty pop.csv
        assert "no per-rank timings" in out[key].read_text()
