import numpy as np
import pandas as pd
import pytest

from conftest import REPO
from perfsweep import overhead as ov

TABLE = REPO / "resources" / "reference-data" / "hofinger2018" / "table1.csv"


@pytest.fixture(scope="module")
def wien2k():
    df = pd.read_csv(TABLE)[["n", "wien2k_t"]].dropna()
    t1 = float(df.loc[df.n == 1, "wien2k_t"].iloc[0])
    return df["n"].to_numpy(float), df["wien2k_t"].to_numpy(float), t1


def test_wien2k_least_squares(wien2k):
    fit = ov.fit_least_squares(*wien2k)
    assert fit.n_points == 20
    assert fit.rmsd == pytest.approx(31.307, abs=1e-3)
    assert fit.f_s == pytest.approx(1 / (1 + fit.c), rel=1e-2)


def test_wien2k_triples(wien2k):
    tri = ov.triple_method(*wien2k)
    assert tri.considered == 1140
    assert sum(tri.misses.values()) + tri.valid_triples == 1140
    best = tri.solutions[0]
    assert best.triple == (96, 320, 512)
    assert best.rmsd == pytest.approx(31.462, abs=1e-3)
    assert best.f_s == pytest.approx(3.39e-4, rel=5e-3)
    assert best.b == pytest.approx(33.08, rel=5e-3)
    assert best.c == pytest.approx(31.73, rel=5e-3)
    twin = tri.solutions[1]
    assert twin.triple == best.triple and twin.f_s > best.f_s
    n, t, t1 = wien2k
    # the triple's curve passes exactly through its three points
    for nk in best.triple:
        assert ov.model_time(nk, t1, best.f_s, best.b, best.c) == pytest.approx(t[n == nk][0], rel=1e-9)


@pytest.mark.parametrize("f, b, c", [(0.0, 0.0, 0.0), (0.3, 5.0, 2.0), (1e-4, 33.0, 31.7), (0.9, 100.0, 1.0)])
def test_identities(f, b, c):
    n = np.array([1, 2, 7, 64, 1000.0])
    t1 = 123.0
    t = ov.model_time(n, t1, f, b, c)
    assert t[0] == pytest.approx(t1)
    tau = ov.model_overhead(n, t1, f, b, c)
    assert tau / t == pytest.approx(b * (n - 1) / ((1 + c) * (n + c)))


def test_twin_gives_same_times_everywhere():
    t1, f, b, c = 100.0, 0.02, 3.0, 4.0
    n3 = np.array([4.0, 16.0, 64.0])
    miss, sols = ov.solve_triple(n3, ov.model_time(n3, t1, f, b, c), t1)
    assert miss is None
    assert any(s == pytest.approx((f, b, c)) for s in sols)
    grid = np.geomspace(1, 5000, 40)
    # the twin (alpha <-> f) exists as a model even when one of its parameters is out of bounds
    alpha = 1 / (1 + c)
    beta = (1 + c - b) / (1 + c) ** 2
    c_twin = 1 / f - 1
    b_twin = (1 + c_twin) - beta * (1 + c_twin) ** 2
    assert ov.model_time(grid, t1, alpha, b_twin, c_twin) == pytest.approx(ov.model_time(grid, t1, f, b, c))


def test_recovers_exact_parameters_by_least_squares():
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128.0])
    t = ov.model_time(n, 500.0, 0.01, 8.0, 12.0)
    fit = ov.fit_least_squares(n, t, 500.0)
    assert fit.rmsd < 1e-6 * 500
    assert fit.twin == "f_s is the only root in bounds (no twin)"  # its twin would need b < 0


@pytest.mark.parametrize("seed", range(12))
def test_least_squares_fits_at_least_as_well_as_every_triple(seed):
    """Every triple's exact solution is a point of the model within the bounds, so the least-squares
    fit over all points has no larger RMSD than any of them; noisy data sets from near-Amdahl
    (c -> infinity, where the fit in (f, b, c) ran off) to strong overhead, on 4 to 8 process counts."""
    rng = np.random.default_rng(seed)
    n = [np.array([1, 2, 3, 4.0]), np.array([1, 2, 3, 4, 5, 6.0]), np.array([1, 2, 4, 8, 16, 32, 64, 128.0])][seed % 3]
    for _ in range(100):  # the first data set with a triple in bounds (with noise, many have none)
        f, c = 10 ** rng.uniform(-4, -0.5), 10 ** rng.uniform(-1, 3)
        b = rng.uniform(0.0, 1.2) * (1 + c)
        t = ov.model_time(n, 100.0, f, b, c) * np.exp(rng.normal(0.0, 0.03, len(n)))
        tri = ov.triple_method(n, t, 100.0)
        if tri.solutions:
            break
    assert tri.solutions, "no data set with a triple in bounds: the case tests nothing"
    fit = ov.fit_least_squares(n, t, 100.0)
    assert 0 <= fit.f_s <= 1 and fit.b >= 0 and fit.c >= 0
    assert fit.rmsd <= min(s.rmsd for s in tri.solutions) * (1 + 1e-9) + 1e-12 * t.max()  # exact: rounding
    assert fit.rmsd == pytest.approx(ov.rmsd(n[1:], t[1:], 100.0, fit.f_s, fit.b, fit.c))


def test_karp_flatt_of_amdahl_is_its_serial_fraction():
    n = np.array([2, 4, 8.0])
    assert ov.karp_flatt(n, ov.amdahl(n, 10.0, 0.2), 10.0) == pytest.approx(0.2)


@pytest.mark.parametrize("n, t, t1, message", [
    ([2, 4, 8], [5, 3, 2], None, "no t_1"),
    ([2, 4], [5, 3], 10.0, "need at least 3 points with more than 1 process (got 2)"),
    ([2, 4, 8], [5, -3, 2], 10.0, "times must be positive and finite (got -3.0)"),
    ([2, 4, 4, 8], [5, 3, 3.1, 2], 10.0, "duplicate n = 4"),
    ([1, 2, 4], [10, 5, 3], 10.0, "need at least 3 points with more than 1 process (got 2)"),
    ([2, 4, 8], [5, 3], 10.0, "n and t must be 1-D of the same length (got (3,) and (2,))"),
    ([2, 4.5, 8], [5, 3, 2], 10.0, "process counts n must be whole numbers >= 1"),
])
def test_errors(n, t, t1, message):
    with pytest.raises(ov.OverheadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ov.fit_least_squares(n, t, t1)
    with pytest.raises(ov.OverheadError):
        ov.triple_method(n, t, t1)


@pytest.mark.slow
def test_paper_target_writes_the_reproduction(tmp_path):
    """The paper target of its own Snakemake start: it runs no benchmark (asserted), so no shared sweep
    holds what it makes."""
    from conftest import run_paper_target

    out = run_paper_target("paper_hofinger", tmp_path, hofinger_table=TABLE) / "paper" / "hofinger2018"
    counts = pd.read_csv(out / "triples.csv").set_index("application")
    assert counts.loc["WIEN2k", "triples"] == 1140
    top = pd.read_csv(out / "top_triples.csv")
    assert top.iloc[0]["triple"] == "(96, 320, 512)"
    fig = pd.read_csv(out / "fig2_overhead.csv")
    assert {"measured t_n", "measured MPI overhead"} <= set(fig["series"])
    assert "do not follow from Eq. 1" in " ".join((out / "NOTE.md").read_text().split())
    assert not (tmp_path / "results" / "runs").exists()  # the paper target runs no benchmark


def test_fit_per_group_reports_unfittable_groups():
    med = pd.DataFrame({"n": [1, 1, 1, 1, 2, 2, 2], "p": [1, 2, 3, 4, 2, 3, 4],
                        "median": [10.0, 5.5, 4.0, 3.4, 6.0, 4.5, 4.0]})
    fits, curves, results = ov.fit_per_group(med, "p", "median", ["n"])
    assert list(fits["group"]) == ["n=1", "n=2"]
    assert fits.loc[0, "reason"] == "" and fits.loc[0, "rmsd"] < 0.5
    assert fits.loc[1, "reason"].startswith("no t_1")
    assert list(results) == ["n=1"] and set(curves["p"]) == {2, 3, 4}


def test_singular_triple_has_no_solution(wien2k):
    n, t, t1 = wien2k
    sel = np.isin(n, [112, 160, 320])
    assert ov.solve_triple(n[sel], t[sel], t1) == ("none", [])
    tri = ov.triple_method(*wien2k)
    assert tri.misses["none"] == 1 and tri.summary()["no_solution"] == 1


def test_least_squares_names_its_twin(wien2k):
    fit = ov.fit_least_squares(*wien2k)
    assert "coincide" in fit.twin  # WIEN2k: f_s = 1/(1+c)
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128.0])
    t1, f, b, c = 500.0, 0.01, 12.0, 12.0  # beta = 1/169 <= f: the twin (f_s = 1/13, c = 99) has b >= 0
    fit = ov.fit_least_squares(n, ov.model_time(n, t1, f, b, c), t1)
    assert fit.twin.startswith("f_s is the smaller root")
    assert fit.f_s == pytest.approx(f, rel=1e-3) and fit.c == pytest.approx(c, rel=1e-3)
    assert fit.twin_f_s == pytest.approx(1 / (1 + c), rel=1e-3) and fit.twin_c == pytest.approx(1 / f - 1, rel=1e-3)
    grid = np.geomspace(1, 4096, 30)
    assert ov.model_time(grid, t1, fit.twin_f_s, fit.twin_b, fit.twin_c) == pytest.approx(
        ov.model_time(grid, t1, fit.f_s, fit.b, fit.c), rel=1e-6)


def test_fit_per_group_gives_the_best_triple_where_triples_solve(wien2k):
    """A group whose triples have solutions (WIEN2k's published times) carries the best triple beside
    the least-squares fit, the one TripleResult.best names first."""
    n, t, t1 = wien2k
    fits, _, results = ov.fit_per_group(pd.DataFrame({"p": n, "median": t}), "p", "median", [])
    (row,) = fits.to_dict("records")
    best = results["all"]["triples"].best(1)
    assert row["reason"] == "" and row["best_triple"] == "(96, 320, 512)" == best[0].to_dict()["triple"]
    assert row["triple_f_s"] == best[0].f_s and row["valid_solutions"] == len(results["all"]["triples"].solutions)
