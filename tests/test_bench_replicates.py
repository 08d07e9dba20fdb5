"""bench/replicates.py's agreement of replicate sweeps judged by their predictions (issue 44)."""

from __future__ import annotations

import importlib
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from perfsweep.modeling import Model
from perfsweep.modeling.terms import Factor, Term

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def replicates():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("replicates")
    finally:
        sys.path.remove(str(BENCH))


def law(coef: float, n_power: str, n_log: int = 0, m_power: str = "2") -> Model:
    """coef * n^n_power log2(n)^n_log * m^m_power over (n, m)."""
    return Model(["n", "m"], [Term((Factor(0, Fraction(n_power), n_log), Factor(1, Fraction(m_power), 0)))],
                 np.array([0.0, coef]))


def test_apart_is_the_furthest_two_sweeps_ratio(replicates):
    # the case: n^(3/4) log2(n) m^2 in one sweep, n m^(9/4) in the others, agreeing at (1000, 3)
    a = law(1.0, "3/4", 1)
    b = law(1000 ** 0.75 * np.log2(1000) * 9 / (1000 * 3 ** 2.25), "1", 0, "9/4")
    points = np.array([[1000.0, 3.0], [2500.0, 3.0], [1000.0, 7.0]])
    out = replicates.apart(np.array([m.predict(points) for m in (a, b, b)]))
    expected = np.array([b.predict(points) / a.predict(points), a.predict(points) / b.predict(points)]).max(axis=0) - 1
    np.testing.assert_allclose(out, expected)
    assert out[0] == pytest.approx(0.0, abs=1e-12)
    assert out[1] > 0.10 and out[2] > 0.10  # they part beyond the grid in n and in m
    negative = Model(["n", "m"], [], np.array([-1.0]))  # a non-positive prediction has no ratio
    assert np.isnan(replicates.apart(np.array([a.predict(points), negative.predict(points)]))).all()


def test_held_back_points_lie_beyond_the_default_grid_and_are_not_named_by_the_config(replicates):
    import yaml
    config = yaml.safe_load((BENCH.parent / "config" / "config.yaml").read_text())
    held = replicates.held_back_config(config)
    assert held["repetitions"] == 3 and "decide" not in held
    for name, lines in replicates.HELD_BACK.items():
        study = config["studies"][name]
        named = [tuple(sorted(p.items())) for p in study.get("validate", {}).get("points", [])]
        for k, (vary, at) in enumerate(lines):
            entry = held["studies"][f"{name}{replicates.LINE}{k}"]
            assert entry["vary"] == vary and all(entry["fixed"][p] == v for p, v in at.items())
            for param, values in vary.items():
                if param == "p":
                    continue
                top = max(study["vary"][param])
                assert all(1.4 <= v / top <= 3 for v in values), (name, param, values)
                for v in values:  # no held-back point is one of the config's validation points
                    point = {**{q: at.get(q) for q in study["vary"]}, **{q: vary[q][0] for q in vary}, param: v}
                    assert tuple(sorted(point.items())) not in named


def test_the_committed_sweeps_give_the_committed_figures(replicates):
    # the evidence behind docs/explanation/models.md: judged again from bench/results, the same figures
    import json
    import yaml
    config = yaml.safe_load((BENCH.parent / "config" / "config.yaml").read_text())
    # the sweeps the docs quote: faf914e's on a quiet host, 15dbcfd's under the load (bench/results/README.md)
    for kind, tree in (("quiet", "faf914e-quiet"), ("busy", "15dbcfd-busy")):
        root = BENCH / "results" / "replicates" / tree
        kept = json.loads((root / "summary.json").read_text())
        dirs = sorted(p for p in root.glob("sweep*") if p.is_dir())
        _, summary = replicates.judge(dirs, config, False, None, kind == "busy")
        for key in ("worst_median_error", "apart_within_10", "apart_within_15", "coverage", "points", "median_width"):
            assert summary[key] == pytest.approx(kept[key]), (kind, key)
