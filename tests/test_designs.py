"""Experiment designs (perfsweep.sweep.designs): which configurations a study measures, adaptive rounds,
and ``perfsweep plan``. The incremental behaviour with the real Snakemake is in
tests/test_designs_incremental.py."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from perfsweep.atomic import write_json_atomic
from perfsweep.cluster.launch import resolve
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.steps import adapt, estimate
from perfsweep.sweep import plan
from perfsweep.sweep.record import OTHER_LAUNCH, RUN_SCHEMA
from perfsweep.sweep.spec import RunSpec

PERFSWEEP = [str(__import__("pathlib").Path(sys.executable).with_name("perfsweep"))]


def sweep_config(vary, design=None, top=None, results="results", k=2):
    study = {"vary": vary}
    if design is not None:
        study["design"] = design
    cfg = {"app": {"command": "{launcher} app " + " ".join(f"{{{n}}}" for n in vary)},
           "parameters": {n: v[0] for n, v in vary.items()}, "studies": {"s": study}, "repetitions": k,
           "results": str(results)}
    if top is not None:
        cfg["design"] = top
    return cfg


GRID3 = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5], "c": [1.5, 1.75, 2.0, 2.25, 2.5]}


def test_full_is_the_default_and_the_whole_grid():
    study = load_config(sweep_config(GRID3)).study("s")
    assert study.design.kind == "full"
    assert [c.config_id for c in study.configurations()] == [c.config_id for c in study.grid()]
    assert len(study.configurations()) == 125


def test_sparse_is_lines_through_the_smallest_values_plus_extra_points():
    study = load_config(sweep_config(GRID3, "sparse")).study("s")
    configs = study.configurations()
    grid_ids = [c.config_id for c in study.grid()]
    assert len(configs) == 1 + 3 * 4 + 2
    # the same ids as in the full grid, in grid order
    assert [c.config_id for c in configs] == [i for i in grid_ids if i in {c.config_id for c in configs}]
    base = {"n": 200, "m": 1, "c": 1.5}
    off = [c for c in configs if sum(c.params[k] != base[k] for k in base) >= 2]
    on = [c for c in configs if sum(c.params[k] != base[k] for k in base) <= 1]
    assert len(on) == 13 and len(off) == 2  # every value of every parameter on its line, 2 points off them
    for name, values in GRID3.items():
        assert sorted({c.params[name] for c in on}) == values
    # the first extra point separates sums from products best: the corner opposite the base
    assert {"n": 1000, "m": 5, "c": 2.5}.items() <= off[-1].params.items() or \
        {"n": 1000, "m": 5, "c": 2.5}.items() <= off[0].params.items()


def test_sparse_extra_points_cover_the_interactions_and_grow_linearly():
    study = load_config(sweep_config(GRID3, {"kind": "sparse", "extra": 4})).study("s")
    off = [c.params for c in study.configurations() if sum(c.params[k] != GRID3[k][0] for k in GRID3) >= 2]
    # the corner, then one point per pair of parameters at their largest values (the third at its base)
    assert sorted((p["n"], p["m"], p["c"]) for p in off) == [(200, 5, 2.5), (1000, 1, 2.5), (1000, 5, 1.5),
                                                             (1000, 5, 2.5)]
    five = {f"x{i}": [1, 2, 3, 4, 5] for i in range(5)}
    sparse = load_config(sweep_config(five, "sparse")).study("s")
    assert len(sparse.configurations()) == 1 + 5 * 4 + 2  # the grid has 3,125


def test_extra_points_beyond_the_interactions_go_where_their_estimates_are_least_certain():
    # through the centre, 4 corners span the 4 products of 3 parameters; the next 4 extra points are
    # the other 4 corners (the face-centred central composite design), not points near the centre
    study = load_config(sweep_config(GRID3, {"kind": "sparse", "base": "centre", "extra": 8})).study("s")
    off = {(p["n"], p["m"], p["c"]) for p in (c.params for c in study.configurations())
           if sum(p[k] != study.design.base[k] for k in GRID3) >= 2}
    assert off == {(n, m, c) for n in (200, 1000) for m in (1, 5) for c in (1.5, 2.5)}
    # and the choice is a sequence: 6 extra points are the first 6 of the 8
    six = load_config(sweep_config(GRID3, {"kind": "sparse", "base": "centre", "extra": 6})).study("s")
    assert {c.config_id for c in six.configurations()} < {c.config_id for c in study.configurations()}


def test_base_point_and_top_level_default():
    cfg = sweep_config(GRID3, {"kind": "sparse", "base": {"m": 3}, "extra": 0}, top="adaptive")
    cfg["studies"]["t"] = {"vary": {"n": [200, 400, 600], "m": [1, 2, 3]}}
    sweep = load_config(cfg)
    s, t = sweep.study("s"), sweep.study("t")
    assert s.design.kind == "sparse" and t.design.kind == "adaptive"  # the top level is the default
    assert all(sum(c.params[k] != {"n": 200, "m": 3, "c": 1.5}[k] for k in GRID3) <= 1 for c in s.configurations())
    assert len(s.configurations()) == 13


def test_more_extra_points_than_the_grid_has_off_the_lines_are_as_many_as_it_has():
    study = load_config(sweep_config({"n": [1, 2, 3], "m": [1, 2]}, {"kind": "sparse", "extra": 5})).study("s")
    assert study.design.extra == 2 and study.design.text() == "sparse (lines + 2 extra)"
    assert len(study.configurations()) == 6


@pytest.mark.parametrize("centre", ["centre", "center"])
def test_base_centre_is_every_parameters_middle_value(centre):
    four = {**GRID3, "d": [0.2, 0.4, 0.6, 0.8]}  # an even count: the lower of the two middle values
    study = load_config(sweep_config(four, {"kind": "sparse", "base": centre, "extra": 0})).study("s")
    assert study.design.base == {"n": 600, "m": 3, "c": 2.0, "d": 0.4}
    configs = study.configurations()
    assert len(configs) == 1 + 3 * 4 + 3
    assert all(sum(c.params[k] != study.design.base[k] for k in four) <= 1 for c in configs)
    assert study.design.text() == "sparse (lines through {n = 600, m = 3, c = 2, d = 0.4} + 0 extra)"


def test_base_largest_is_every_parameters_largest_value_and_the_corners_opposite_come_first():
    study = load_config(sweep_config(GRID3, {"kind": "sparse", "base": "largest", "extra": 4})).study("s")
    assert study.design.base == {"n": 1000, "m": 5, "c": 2.5}
    assert study.design.text() == "sparse (lines through {n = 1000, m = 5, c = 2.5} + 4 extra)"
    points = {tuple(c.params[k] for k in GRID3) for c in study.configurations()}
    lines = {p for p in points if sum(v != b for v, b in zip(p, (1000, 5, 2.5))) <= 1}
    assert len(lines) == 13 and len(points) == 17
    # the first extra point is the corner opposite the base; the next ones span the pairs' products
    assert (200, 1, 1.5) in points - lines
    assert all(sum(v != b for v, b in zip(p, (1000, 5, 2.5))) >= 2 for p in points - lines)


@pytest.mark.parametrize("design, where, message", [
    ({"kind": "sparse", "base": "middle"}, "studies.s.design.base", "'middle' is not a base: give centre"),
    ({"kind": "sparse", "base": 3}, "studies.s.design.base", "3 is not of type 'object', 'string'"),
    ("sprase", "studies.s.design", "'sprase' is not a design"),
    ({"kind": "sparse", "base": {"n": 300}}, "studies.s.design.base.n", "300 is not one of its values"),
    ({"kind": "sparse", "base": {"d": 1}}, "studies.s.design.base.d", "'d' is not varied"),
    ({"kind": "full", "extra": 2}, "studies.s.design.extra", "only for sparse or adaptive"),
    ({"kind": "sparse", "per_round": 2}, "studies.s.design.per_round", "only for design kind adaptive"),
    ({"extra": 2}, "studies.s.design.kind", "no kind"),
    ({"kind": "adaptive", "budget": 0}, "studies.s.design.budget", "less than or equal to the minimum of 0"),
    ({"kind": "sparse", "lines": 2}, "studies.s.design", "unknown key"),
])
def test_bad_designs_are_one_line_errors(design, where, message):
    with pytest.raises(ConfigError) as exc:
        load_config(sweep_config(GRID3, design), source="c.yaml")
    assert str(exc.value).startswith(f"c.yaml: {where}: ") and message in str(exc.value)


def test_a_sparse_design_of_a_grid_too_large_to_plan_in_full_is_accepted():
    huge = {f"x{i}": list(range(1, 11)) for i in range(6)}  # 10^6 configurations
    with pytest.raises(ConfigError, match="more than the 100,000"):
        load_config(sweep_config(huge))
    study = load_config(sweep_config(huge, {"kind": "sparse", "extra": 0})).study("s")
    assert len(study.configurations()) == 1 + 6 * 9
    with pytest.raises(ConfigError, match=r"c.yaml: studies.s.design: a grid of 1,000,000 configurations is too large"):
        load_config(sweep_config(huge, "adaptive"), source="c.yaml")


# --- adaptive rounds, on records of a known function (the records the runner writes: time, wall_time)

def write_records(results, study, configs, func, k=3, rng=None, wall=0.5, sweep=None, noise=0.02, first=0):
    """Records of ``func`` plus noise (uniform, +-``noise``); with ``sweep``, launched as its spec launches
    them now (as the runner records the launch: a built-in app's command gets a --report file of the run);
    repetitions ``first`` to k - 1."""
    rng = rng or np.random.default_rng(1)
    for c in configs:
        for rep in range(first, k):
            t = func(c.params) * (1 + rng.uniform(-noise, noise))
            rec = {"schema": RUN_SCHEMA, "run_id": f"{study.name}/{c.config_id}/rep{rep}", "study": study.name,
                   "config_id": c.config_id, "repetition": rep, "status": "ok", "time": t, "wall_time": wall,
                   "parameters": c.params}
            if sweep is not None:
                spec = RunSpec.build(sweep, c, rep)
                extra = ["--report", f"/tmp/perfsweep-run-{rep}/report.json"] if spec.report_path == "{report}" else []
                command = [*spec.command, *extra]
                rec["launch"] = {"command": resolve(command), "spec_command": command, "launcher": spec.launcher}
            write_json_atomic(results / "runs" / study.name / c.config_id / f"rep{rep}.json", rec)


def product(p):
    return 0.5 + 0.01 * p["n"] * p["m"] ** 2


def test_adaptive_round_adds_the_points_where_the_models_disagree_and_stops(tmp_path):
    vary = {"n": [4, 8, 16, 32, 64], "m": [1, 2, 3, 4, 5]}
    sweep = load_config(sweep_config(vary, {"kind": "adaptive", "extra": 0, "per_round": 2, "rounds": 3},
                                     results=tmp_path, k=3))
    study = sweep.study("s")
    start = study.configurations()
    assert len(start) == 9
    assert adapt.next_round(sweep, tmp_path) is False  # nothing measured yet: nothing to decide on
    write_records(tmp_path, study, start, product)
    assert adapt.next_round(sweep, tmp_path) is True
    state = json.loads(plan.points_path(tmp_path, "s").read_text())
    added = state["points"]
    assert len(added) == 2 and not set(added) & {c.config_id for c in start}
    assert state["rounds"][0]["added"] == added and state["rounds"][0]["lead"]
    assert adapt.next_round(sweep, tmp_path) is False  # the added points are not measured yet
    plan.add_planned_points(sweep)  # what the workflow does while it plans
    now = study.configurations()
    assert {c.config_id for c in now} == {c.config_id for c in start} | set(added)
    grid = {c.config_id: c.params for c in study.grid()}
    assert all(c.params == grid[c.config_id] for c in now)  # ids and parameters as in the full grid
    for _ in range(5):  # measure what each round adds until the design stops
        write_records(tmp_path, study, [c for c in study.configurations() if c.config_id not in
                                        {p.name for p in (tmp_path / "runs" / "s").iterdir()}], product)
        if not adapt.next_round(sweep, tmp_path):
            break
        plan.add_planned_points(sweep)
    state = json.loads(plan.points_path(tmp_path, "s").read_text())
    assert state["stopped"] in ("lead terms stable", "all rounds done")
    assert sum(1 for r in state["rounds"] if r["added"]) <= 3
    assert state["rounds"][-1]["lead"] == "n * m^2"  # the product was found from lines and added points
    assert adapt.next_round(sweep, tmp_path) is False  # stopped: again, nothing to add


def test_adaptive_stops_when_its_budget_is_spent(tmp_path):
    vary = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5]}
    sweep = load_config(sweep_config(vary, {"kind": "adaptive", "extra": 0, "budget": 0.001},
                                     results=tmp_path, k=3))
    study = sweep.study("s")
    write_records(tmp_path, study, study.configurations(), product, wall=1.0)  # 27 s > 3.6 s
    assert adapt.next_round(sweep, tmp_path) is False
    state = json.loads(plan.points_path(tmp_path, "s").read_text())
    assert state["stopped"] == "budget spent" and state["points"] == []
    assert state["rounds"][0]["core_hours"] == pytest.approx(27 / 3600)


def test_a_raised_budget_decides_again_on_the_same_points_without_a_new_round(tmp_path):
    """A design stopped by its budget, the budget raised: the next round step decides again on the
    points it had (no new round, no new fit of the same records) and adds the points of most
    disagreement."""
    vary = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5]}
    design = {"kind": "adaptive", "extra": 0, "per_round": 2, "budget": 0.001}
    sweep = load_config(sweep_config(vary, design, results=tmp_path, k=3))
    study = sweep.study("s")
    write_records(tmp_path, study, study.configurations(), product, wall=1.0)
    assert adapt.next_round(sweep, tmp_path) is False
    before = json.loads(plan.points_path(tmp_path, "s").read_text())
    assert before["stopped"] == "budget spent" and len(before["rounds"]) == 1
    sweep = load_config(sweep_config(vary, {**design, "budget": 1.0}, results=tmp_path, k=3))
    assert adapt.next_round(sweep, tmp_path) is True
    after = json.loads(plan.points_path(tmp_path, "s").read_text())
    assert len(after["rounds"]) == 1 and after["stopped"] is None  # the same round, decided again
    (entry,) = after["rounds"]
    assert entry["lead"] == before["rounds"][0]["lead"] and entry["model"] == before["rounds"][0]["model"]
    assert len(after["points"]) == 2 and entry["added"] == after["points"]


def test_an_adaptive_design_without_a_model_stops_and_says_why(tmp_path, capsys):
    vary = {"n": [-1, 0, 1, 2], "m": [1, 2, 3]}  # values <= 0: no PMNF model
    sweep = load_config(sweep_config(vary, {"kind": "adaptive", "extra": 1}, results=tmp_path, k=2))
    study = sweep.study("s")
    write_records(tmp_path, study, study.configurations(), lambda p: 1.0 + p["m"], k=2)
    assert adapt.next_round(sweep, tmp_path) is False
    state = json.loads(plan.points_path(tmp_path, "s").read_text())
    assert state["points"] == [] and state["stopped"].startswith("no model of the run time (parameter values must be")
    assert "the adaptive design adds no points: no model of the run time" in capsys.readouterr().out
    assert adapt.next_round(sweep, tmp_path) is False  # decided on these points: not again
    (line,) = [l for l in estimate.plan_lines(sweep) if l.startswith("  s:")]
    assert "up to" not in line and "its rounds stopped: no model of the run time" in line


def test_a_damaged_points_file_is_named_not_planned_anew(tmp_path):
    from perfsweep.errors import UserError

    assert plan.read_points(tmp_path, "s")["points"] == []  # none yet: a new design
    path = plan.points_path(tmp_path, "s")
    path.parent.mkdir(parents=True)
    for text, what in (("{not json", "not a readable plan file"), ("[1]", "not a JSON object"),
                       ('{"points": 3}', "'points' is not a list of configuration ids"),
                       ('{"points": [[1, 2]]}', "'points' is not a list of configuration ids")):
        path.write_text(text)
        with pytest.raises(UserError, match=f"^{re.escape(str(path))}: .*{re.escape(what)}"):
            plan.read_points(tmp_path, "s")


def test_disagreement_is_the_spread_of_the_resampled_models():
    from perfsweep.modeling import FitOptions, fit_model

    rng = np.random.default_rng(0)
    x = np.array([[v] for v in (1, 2, 3, 4, 5.0)])
    y = (2 + x[:, 0]) [:, None] * (1 + rng.uniform(-0.05, 0.05, (5, 5)))
    model = fit_model(x, y, ["n"], options=FitOptions(bootstrap=20))
    spread = adapt.disagreement(model, np.array([[3.0], [50.0]]))
    assert 0 <= spread[0] < spread[1]  # inside the measured range they agree more than far beyond it


# --- perfsweep plan

def test_plan_prints_design_configurations_runs_and_core_hours(tmp_path):
    cfg = sweep_config(GRID3, "sparse", results=tmp_path / "results", k=2)
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    out = subprocess.run([*PERFSWEEP, "plan", str(path), "--seconds-per-run", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "s: design sparse (lines + 2 extra): 15 of 125 configurations (12 % of the grid); 30 runs (0 measured)" \
        in out.stdout
    assert f"{30 * 2 / 3600:.4g} core-hours" in out.stdout and "assumed 2 s per run and process" in out.stdout
    # with records: their wall time x processes, the median of the measured ones for the others
    sweep = load_config(cfg)
    study = sweep.study("s")
    write_records(tmp_path / "results", study, study.configurations()[:5], product, k=2, wall=9.0, sweep=sweep)
    out = subprocess.run([*PERFSWEEP, "plan", str(path)], capture_output=True, text=True)
    assert "30 runs (10 measured)" in out.stdout
    assert f"{30 * 9 / 3600:.4g} core-hours ({20 * 9 / 3600:.4g} still to run)" in out.stdout
    assert "records of 5 configurations, their median for the other 10" in out.stdout
    assert out.stdout.splitlines()[-1].startswith("total: 15 configurations, 30 runs (10 measured)")
    # damaged records (a null time; one copied from another configuration) are set aside and run again
    runs = tmp_path / "results" / "runs" / "s"
    first, second = (c.config_id for c in study.configurations()[:2])
    rec = json.loads((runs / first / "rep0.json").read_text())
    write_json_atomic(runs / first / "rep0.json", {**rec, "time": None})
    (runs / second / "rep1.json").write_text((runs / first / "rep1.json").read_text())
    out = subprocess.run([*PERFSWEEP, "plan", str(path)], capture_output=True, text=True)
    assert "30 runs (8 measured)" in out.stdout, out.stdout
    assert "; 2 damaged records (perfsweep check-records names them), to be set aside and run again" in out.stdout


def test_plan_says_which_study_gets_no_model_for_lack_of_values(tmp_path):
    cfg = sweep_config({"n": [200, 400, 600], "m": [1, 2], "c": [1.5, 2.0]}, "full", results=tmp_path / "results")
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    out = subprocess.run([*PERFSWEEP, "plan", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("  s: "))
    assert line.endswith("; no model: m has 2, c has 2 values (a model needs at least 3 of each)"), line
    path.write_text(json.dumps(sweep_config(GRID3, "full", results=tmp_path / "results")))
    out = subprocess.run([*PERFSWEEP, "plan", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and "no model" not in out.stdout, out.stdout


def test_plan_estimates_only_from_records_of_the_current_launch(tmp_path):
    cfg = {"app": {"name": "ljmd", "args": {"steps": 10}}, "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
           "studies": {"s": {"vary": {"n": [100, 200], "p": [1, 2]}}}, "repetitions": 2,
           "results": str(tmp_path / "results")}
    sweep = load_config(cfg)
    write_records(tmp_path / "results", sweep.study("s"), sweep.study("s").configurations(), product, k=2, wall=9.0,
                  sweep=sweep)
    plan = estimate.plan_study(sweep, sweep.study("s"), seconds=2.0)
    assert plan.core_hours == pytest.approx(2 * 9.0 * (1 + 2 + 1 + 2) / 3600)  # wall time x p, 2 runs each
    assert plan.source == "records of every configuration" and plan.measured == 8
    # the app now steps 40 instead of 10: the records say nothing of the runs to come
    longer = load_config({**cfg, "app": {"name": "ljmd", "args": {"steps": 40}}})
    plan = estimate.plan_study(longer, longer.study("s"), seconds=2.0)
    assert plan.core_hours == pytest.approx(2 * 2.0 * (1 + 2 + 1 + 2) / 3600)  # the assumed 2 s x p
    assert plan.measured == 0 and plan.to_run_core_hours == plan.core_hours  # Snakemake runs them all again
    assert plan.source == ("assumed 2 s per run and process (no records of this launch yet); "
                           f"8 records {OTHER_LAUNCH} not used and to run again")
    assert plan.source in "\n".join(estimate.plan_lines(longer, 2.0))
    # one configuration measured again with the new launch: its records, their median for the others
    write_records(tmp_path / "results", longer.study("s"), longer.study("s").configurations()[:1], product, k=2,
                  wall=5.0, sweep=longer)
    plan = estimate.plan_study(longer, longer.study("s"), seconds=2.0)
    assert plan.core_hours == pytest.approx(2 * 5.0 * 4 / 3600) and plan.measured == 2
    assert plan.source == ("records of 1 configurations, their median for the other 3; "
                           f"6 records {OTHER_LAUNCH} not used and to run again")


def test_plan_counts_the_repetitions_adaptive_rounds_planned(tmp_path):
    cfg = sweep_config(GRID3, "sparse", results=tmp_path / "results", k={"min": 2, "max": 4})
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    study = load_config(cfg).study("s")
    first = study.configurations()[0].config_id
    # a round asked for 3 repetitions of one configuration (perfsweep.steps.rounds' state file)
    write_json_atomic(tmp_path / "results" / "plan" / "s" / "repetitions.json", {first: 3})
    out = subprocess.run([*PERFSWEEP, "plan", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "; 31 runs (0 measured, up to 60 with adaptive repetitions);" in out.stdout, out.stdout


def test_adaptive_fit_needs_two_points_and_disagreement_takes_models_below_zero():
    """An adaptive round fits nothing on one measured configuration, and says why; where a candidate
    model predicts zero or less, the models' disagreement is their spread relative to their mean."""
    from fractions import Fraction

    from perfsweep.modeling.model import Model
    from perfsweep.modeling.terms import Factor, Term

    assert adapt._fit([[100.0]], [[0.1, 0.11]], ["n"], "p") == (None, "1 configuration(s) with a good run")
    n = Term((Factor(0, Fraction(1), 0),))
    model = Model(["n"], [n], np.array([-1.0, 0.01]))  # below zero up to n = 100
    model.bootstrap = [Model(["n"], [n], np.array([-1.0, 0.012]))]
    x = np.array([[50.0], [200.0]])
    preds = np.array([model.predict(x), model.bootstrap[0].predict(x)])
    want = np.std(preds, axis=0) / np.abs(np.mean(preds, axis=0))
    assert np.allclose(adapt.disagreement(model, x), want) and np.all(adapt.disagreement(model, x) > 0)
