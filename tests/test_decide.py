"""Measuring until decided (perfsweep.steps.decide): the decision on records of known functions, the
config keys, and real Snakemake sweeps of the built-in ljmd in which an undecided study is measured
until its budget is spent and a decided one gets no more runs, and in which a busy host's disturbed
configurations are measured again until the budget is spent."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import BIN
from perfsweep.config import load_config
from perfsweep.errors import ConfigError
from perfsweep.modeling.pipeline import BOOTSTRAP, ROUND_BOOTSTRAP
from perfsweep import stats
from perfsweep.steps import decide, estimate
from perfsweep.sweep import plan
from sweeps.lane import lane_test
from test_designs import sweep_config, write_records

LAW_APP = Path(__file__).resolve().parent / "apps" / "law_app.py"

VARY = {"n": [200, 400, 600, 800, 1000], "m": [1, 2, 3, 4, 5]}


def decide_sweep(tmp_path, rule, design=None, k=3):
    cfg = sweep_config(VARY, design, results=tmp_path, k=k)
    cfg["studies"]["s"]["decide"] = rule
    cfg["studies"]["s"]["validate"] = [{"n": 2500, "m": 3}]
    return load_config(cfg, source="c.yaml")


def measure_what_was_added(tmp_path, sweep, func, rng):
    """What the workflow does after a step added runs: plan the new points, write every missing record."""
    plan.add_planned_points(sweep)
    study = sweep.study("s")
    want = plan.planned_repetitions(study, tmp_path)
    for c in study.configurations():
        have = len(list((tmp_path / "runs" / "s" / c.config_id).glob("rep*.json")))
        if have < want[c.config_id]:
            write_records(tmp_path, study, [c], func, k=want[c.config_id], rng=rng, noise=0.3, first=have)


def state(tmp_path):
    return json.loads((tmp_path / "plan" / "s" / "decide.json").read_text())


def test_a_decided_study_gets_no_more_runs(tmp_path, capsys):
    sweep = decide_sweep(tmp_path, {"budget": 0.5, "lead_share": 0.8})
    study = sweep.study("s")
    write_records(tmp_path, study, study.configurations(), lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2)
    assert decide.decide_round(sweep, tmp_path) == (False, False)  # the validation point is not measured yet
    assert not (tmp_path / "plan" / "s" / "decide.json").exists()
    write_records(tmp_path, study, study.validation, lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2)
    assert decide.decide_round(sweep, tmp_path) == (False, True)  # no runs, settled
    s = state(tmp_path)
    assert s["ended"] == "decided" and s["points"] == [] and s["repetitions"] == {}
    assert s["rounds"][0]["lead_share"] >= 0.8
    assert "study s: measuring ended: decided" in capsys.readouterr().out
    assert plan.planned_repetitions(study, tmp_path) == {c.config_id: 3 for c in study.configurations()}
    assert decide.decide_round(sweep, tmp_path) == (False, True)  # decided on these runs: not again


def test_the_models_stage_resamples_decide_near_the_level(tmp_path):
    # the rounds steer with ROUND_BOOTSTRAP resamples; a share near the level is fitted again with the
    # models stage's BOOTSTRAP, whose share the decision and decide.json hold: the models table then says
    # the same (with 40 alone a busy sweep's study ended decided at 0.90 that the models table said 0.78)
    func = lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2  # noqa: E731
    sweep = decide_sweep(tmp_path, {"budget": 0.4, "lead_share": 0.5})
    study = sweep.study("s")
    write_records(tmp_path, study, [*study.configurations(), *study.validation], func,
                  rng=np.random.default_rng(3), noise=0.3)
    planned = plan.measured_repetitions(study, tmp_path)
    rounds = decide.stage_model(sweep, study, tmp_path, planned)[0]  # ROUND_BOOTSTRAP alone
    models = decide.stage_model(sweep, study, tmp_path, planned, confirm_at=0.0)[0]  # any share: BOOTSTRAP
    assert len(rounds.bootstrap) <= ROUND_BOOTSTRAP < len(models.bootstrap) <= BOOTSTRAP
    few, many = rounds.lead_share, models.lead_share
    assert few != many and abs(few - many) < decide.CONFIRM  # (what the test needs: the counts disagree)
    level = max(few, many)  # reached by one count only
    sweep = decide_sweep(tmp_path, {"budget": 0.4, "lead_share": level})
    decide.decide_round(sweep, tmp_path)
    s = state(tmp_path)
    assert s["rounds"][0]["lead_share"] == many
    assert (s["ended"] == "decided") == (many >= level)


def test_an_undecided_study_is_measured_until_its_budget_is_spent(tmp_path, capsys):
    # 30 % noise on n * m^2 and a lead share of 1 asked for: the resamples never all agree
    sweep = decide_sweep(tmp_path, {"budget": 0.4, "lead_share": 1.0})
    study = sweep.study("s")
    rng = np.random.default_rng(3)
    func = lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2  # noqa: E731
    write_records(tmp_path, study, [*study.configurations(), *study.validation], func, rng=rng, noise=0.3)
    planned_runs = 3 * 25
    steps = 0
    while (said := decide.decide_round(sweep, tmp_path))[0]:
        steps += 1
        last = state(tmp_path)["rounds"][-1]["added"]["last"]
        assert said == (True, last)  # settled after the last step the budget allows
        assert decide.decide_round(sweep, tmp_path) == (False, False)  # the added runs are not measured yet
        measure_what_was_added(tmp_path, sweep, func, rng)
        assert steps < 60
    s = state(tmp_path)
    assert steps >= 2
    assert s["ended"] == "budget spent, form undecided"
    last = s["rounds"][-1]
    assert last["lead_share"] < 1.0
    assert last["planned_core_hours"] == pytest.approx(planned_runs * 0.5 / 3600)
    # every run added was within the budget: 0.4 of the planned core-hours
    assert 0 < last["spent_core_hours"] <= 0.4 * last["planned_core_hours"] + 1e-12
    added = sum(s["repetitions"].values()) + 3 * len(s["points"])
    assert last["spent_core_hours"] == pytest.approx(added * 0.5 / 3600)
    out = capsys.readouterr().out
    assert "study s: measuring ended: budget spent (" in out and "core-hours), form undecided (lead share" in out
    line = plan.measuring_ended(study.decide, last["lead_share"], last["width"], True, s)
    assert line.startswith("budget spent (") and "form undecided (lead share" in line and "\n" not in line
    for p in s["points"]:  # new points lie in the grid or one step beyond its largest values
        assert all(v in VARY[n] or v == 2 * VARY[n][-1] - VARY[n][-2] for n, v in p.items())
    plan.add_planned_points(sweep)
    ids = {c.config_id for c in study.configurations()}
    assert all(study.point(p).config_id in ids for p in s["points"])
    assert decide.decide_round(sweep, tmp_path) == (False, True)  # ended on these runs: not again
    # a raised budget measures on from where it ended
    more = decide_sweep(tmp_path, {"budget": 0.8, "lead_share": 1.0})
    plan.add_planned_points(more)
    assert decide.decide_round(more, tmp_path)[0] is True and state(tmp_path)["ended"] is None


def checkerboard(p):
    """n m^2 with every configuration 6 % above or below it, alternately over the grid, the same in every
    run: a time no smooth form fits (as ljmd's own misfit, bench/results/lack_of_fit.txt, only larger)."""
    return (0.5 + 0.01 * p["n"] * p["m"] ** 2) * (1.06 if (p["n"] // 200 + p["m"]) % 2 else 0.94)


def test_the_lack_of_fit_against_the_repetitions_noise():
    # the F test in log time, of the best of the forms the resamples chose (as the pipeline fits them): a
    # smooth law with noise is no misfit (at most a false alarm in 20 at 0.001; the reported form alone,
    # n^(2/3) log2(n)^2 m^2 where the noise chose it, gave 1 in 40), the checkerboard is, in every draw;
    # what it says is in log units, about fractions
    from perfsweep.modeling.fit import fit_model
    from perfsweep.modeling.fit_input import FitOptions
    grid = [{"n": n, "m": m} for n in VARY["n"] for m in VARY["m"]]
    x = np.array([[g["n"], g["m"]] for g in grid], float)
    smooth = lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2  # noqa: E731
    rng = np.random.default_rng(5)
    alarms, found = 0, []
    for _ in range(20):
        for law, out in ((smooth, None), (checkerboard, found)):
            times = [list(law(g) * np.exp(rng.normal(0, 0.01, 3))) for g in grid]
            model = fit_model(x, np.array(times), ["n", "m"], options=FitOptions(bootstrap=20))
            got = decide.lack_of_fit_of(model, times)
            if out is None:
                alarms += got["p"] < decide.MISFIT_P
            else:
                out.append(got)
    assert alarms <= 1
    assert all(f["p"] < decide.MISFIT_P for f in found)
    assert 0.03 < np.median([f["misfit"] for f in found]) < 0.08  # the 6 % it strays by, less what a form takes
    assert 0.003 < np.median([f["noise"] for f in found]) < 0.015  # 1 % per run, over 3: about 0.7 %
    assert stats.lack_of_fit([0.1, -0.1], 2, [[1.0, 1.1]]) is None  # no degree of freedom left


def test_a_time_no_smooth_form_fits_ends_on_its_lack_of_fit_not_on_more_repetitions(tmp_path, capsys):
    # the repetitions narrow the medians' noise, not the misfit: no more are taken, measuring ends with
    # the budget left and says why in one line; new points could still part the forms (none here does)
    sweep = decide_sweep(tmp_path, {"budget": 0.4, "lead_share": 1.0})
    study = sweep.study("s")
    rng = np.random.default_rng(3)
    write_records(tmp_path, study, [*study.configurations(), *study.validation], checkerboard, rng=rng, noise=0.01)
    for _ in range(10):
        if not decide.decide_round(sweep, tmp_path)[0]:
            break
        measure_what_was_added(tmp_path, sweep, checkerboard, rng)
    s = state(tmp_path)
    last = s["rounds"][-1]
    assert s["ended"].startswith("lack of fit (the medians stray "), s["ended"]
    assert s["repetitions"] == {}
    assert last["lack_of_fit"]["p"] < decide.MISFIT_P and last["lead_share"] < 1.0
    assert last["spent_core_hours"] < 0.4 * last["planned_core_hours"]  # budget left
    out = capsys.readouterr().out
    assert "study s: measuring ended: lack of fit (" in out and "form undecided (lead share" in out
    line = plan.measuring_ended(study.decide, last["lead_share"], last["width"], True, s)
    assert line.startswith("lack of fit (the medians stray ") and "form undecided (lead share" in line
    assert "\n" not in line


def test_the_leading_forms_part_where_they_are_measured_least():
    # two forms fitted alike on n <= 1000 part most beyond it: the candidates one step beyond come first
    from perfsweep.modeling.model import Model
    from perfsweep.modeling.terms import Factor, Term
    from fractions import Fraction
    lin = Model(["n"], [Term((Factor(0, Fraction(1), 0),))], np.array([0.0, 1.0]))
    sq = Model(["n"], [Term((Factor(0, Fraction(2), 0),))], np.array([0.0, 1.0 / 1000]))
    lin.bootstrap = [lin, lin, sq]
    x = np.array([[200.0], [1000.0], [1200.0]])
    parts = decide.discrimination(lin, x)
    assert parts[1] == pytest.approx(0.0, abs=1e-12) and parts[0] == pytest.approx(np.log(5))
    assert parts[2] == pytest.approx(np.log(1.2))


def test_candidates_are_the_grid_and_one_step_beyond_but_not_in_p(tmp_path):
    cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
           "results": str(tmp_path), "decide": {"budget": 0.5},
           "studies": {"s": {"vary": {"n": [100, 200, 300], "p": [1, 2]}}}}
    study = load_config(cfg).study("s")
    cands = decide.candidates(study, {c.config_id for c in study.configurations()})
    assert sorted(c.config_id for c in cands) == ["n=400_p=1", "n=400_p=2"]


def test_no_new_point_at_a_process_count_whose_runs_were_oversubscribed():
    # the default sweep's T_n_p asked for n=2100_p=4 (9.4 standard errors): p = 4 on 2 cores is not
    # fitted, so a point there decides no form; the step goes where the fitted forms part instead
    from fractions import Fraction
    from perfsweep.modeling.model import Model
    from perfsweep.modeling.terms import Factor, Term
    cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
           "decide": {"budget": 0.5}, "studies": {"s": {"vary": {"n": [100, 200, 300, 400, 500], "p": [1, 2, 4]}}}}
    study = load_config(cfg).study("s")
    names = ["n", "p"]
    lin = Model(names, [Term((Factor(0, Fraction(1), 0), Factor(1, Fraction(-1), 0)))], np.array([0.0, 1.0]))
    sq = Model(names, [Term((Factor(0, Fraction(2), 0), Factor(1, Fraction(-1), 0)))], np.array([0.0, 1.0 / 500]))
    lin.bootstrap = [lin, lin, sq]
    configs = study.configurations()
    times = [[] if c.params["p"] == 4 else [c.params["n"] / c.params["p"] * 0.99, c.params["n"] / c.params["p"] * 1.01]
             for c in configs]
    cost = {c.config_id: [1.0, 1.0] for c in configs}
    anywhere = decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0)
    assert anywhere["point"] == {"n": 600, "p": 1}  # the forms part most where p is smallest
    lin.bootstrap = [lin, lin, Model(names, [Term((Factor(0, Fraction(2), 0), Factor(1, Fraction(-3), 0)))],
                                     np.array([0.0, 1.0 / 500]))]  # ... and now most at p = 4
    assert decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0)["point"]["p"] == 4
    got = decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0, unfitted={4})
    assert got["point"]["p"] != 4, got


def test_config_keys_and_bad_values():
    cfg = sweep_config(VARY)
    assert load_config(cfg).study("s").decide is None  # off by default
    s = load_config({**cfg, "decide": {"budget": 0.5}}).study("s")
    assert (s.decide.budget, s.decide.lead_share, s.decide.precision) == (0.5, 0.8, None)
    cfg["studies"]["s"]["decide"] = {"budget": 0.2, "precision": 0.3, "lead_share": 0.9}
    s = load_config({**cfg, "decide": {"budget": 0.5}}).study("s")
    assert (s.decide.budget, s.decide.lead_share, s.decide.precision) == (0.2, 0.9, 0.3)
    for bad, where in [({"lead_share": 0.8}, "studies.s.decide"), ({"budget": -1}, "studies.s.decide.budget"),
                       ({"budget": 0.5, "lead_share": 1.5}, "studies.s.decide.lead_share"),
                       ({"budget": 0.5, "until": 3}, "studies.s.decide")]:
        cfg["studies"]["s"]["decide"] = bad
        with pytest.raises(ConfigError) as err:
            load_config(cfg, source="c.yaml")
        assert str(err.value).startswith(f"c.yaml: {where}: ") and "\n" not in str(err.value), str(err.value)
    cfg["studies"]["s"]["decide"] = {"budget": 0.5}
    with pytest.raises(ConfigError, match=r"^c.yaml: studies.s.decide: measuring until decided with bundle: repetitions"):
        load_config({**cfg, "bundle": "repetitions"}, source="c.yaml")


def test_plan_shows_the_budget(tmp_path):
    sweep = decide_sweep(tmp_path, {"budget": 0.5, "lead_share": 0.8})
    write_records(tmp_path, sweep.study("s"), sweep.study("s").configurations(), lambda p: 1.0, wall=2.0, sweep=sweep)
    lines = estimate.plan_lines(sweep)
    (line,) = [l for l in lines if l.startswith("  s measuring until decided")]
    # 25 configurations x 3 runs x 2 s: 150 core-seconds planned, half of it the budget
    assert "lead share >= 80 %" in line and f"budget {0.5 * 150 / 3600:.4g} core-hours" in line, line


# The real sweeps below stop at the models and the models summary (Snakemake's --omit-from the figures and
# the report's pages, which they do not read): their shape, rounds of measuring until decided, is what
# they test, each its own sweep.
NO_FIGURES = ("--omit-from", "figures", "model_sheet", "report_pages", "report_pages_summary")


@pytest.mark.slow
@lane_test
def test_a_real_sweep_measures_the_undecided_study_until_its_budget_is_spent(tmp_path):
    """perfsweep run: a study that asks for what its noise cannot give (a 90 % interval 0.1 % wide, every
    resample agreeing) gets more runs until its budget is spent, and says so in one line; one that is
    decided from the start (any lead share of 5 % and more, the built-in ljmd) gets none. Its own sweep:
    the rounds are what it tests. What it asserts hangs on no timing the host can flip: the undecided
    study's app reports times of a known law with seeded noise (tests/apps/law_app.py: 1 %, the same
    draws in every sweep), which no load makes decided nor, by a lack of fit, ends before its budget (on
    ljmd's own times, nearly flat over n = 100..300, a load that slowed both runs of one configuration
    did: "the medians stray 37 % from the model, their noise 3 %"); no run counts as disturbed
    (variability.disturbed 1); the decided one's m^2 leads far more than 5 % of the resamples; where the
    budget ended (a step more or less) the assertions allow either."""
    state = tmp_path / "law"
    state.mkdir()
    study = {"app": {"command": f"{sys.executable} {LAW_APP} {{n}} {state}", "time_pattern": r"^time: (\S+)"},
             "parameters": {"n": 100}, "vary": {"n": [100, 150, 200, 250, 300]},
             "validate": {"points": [{"n": 600}], "repetitions": 2}}
    # a form the runs tell: the site pairs' m^2 (measured here: 9.9, 12.8, 17, 23.6, 32.3 ms over m = 1..5,
    # about 1 % apart between runs); ljmd's time over n = 100..300 is nearly flat (7.5-8 ms), so its
    # lead share is whatever the noise makes it (0.05 in one of three sweeps here)
    decided = {"vary": {"m": [1, 2, 3, 4, 5]}, "fixed": {"n": 1000, "d": 0.5, "c": 2.0, "p": 1},
               "validate": {"points": [{"m": 8}], "repetitions": 2}}
    # variability.disturbed 1: no run is disturbed (others cannot take more than all of the cores a run
    # needed), so what this checks (the form's and the interval's decision) does not hang on the shared
    # host's load; a busy host's runs, measured again, are checked by the busy-host sweep below
    cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
           "repetitions": 2, "results": "results", "exclusive": False, "variability": {"disturbed": 1.0},
           "studies": {"undecided": {**study, "decide": {"budget": 0.5, "lead_share": 1.0, "precision": 0.001}},
                       "decided": {**decided, "decide": {"budget": 0.5, "lead_share": 0.05}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    shown = subprocess.run([str(BIN / "perfsweep"), "plan", "c.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert "  undecided measuring until decided (lead share >= 100 % and a 90 % interval at most 0.1 % wide): budget" in shown.stdout, shown.stdout
    proc = subprocess.run([str(BIN / "perfsweep"), "run", "c.yaml", "--cores", "2", "--no-report", "--", *NO_FIGURES],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = tmp_path / "results"
    runs = {name: len(list((results / "runs" / name).rglob("rep*.json"))) for name in ("undecided", "decided")}
    assert runs["decided"] == 5 * 2 + 2  # the design's and the validation point's runs, nothing more
    decided = json.loads((results / "plan" / "decided" / "decide.json").read_text())
    assert decided["ended"] == "decided" and decided["repetitions"] == {} and decided["points"] == []
    state = json.loads((results / "plan" / "undecided" / "decide.json").read_text())
    added = sum(state["repetitions"].values()) + 2 * len(state["points"])
    assert added >= 1 and runs["undecided"] == 12 + added
    last = state["rounds"][-1]
    assert last["budget_core_hours"] == pytest.approx(0.5 * last["planned_core_hours"])
    # ended when no run fitted into the budget, or with the last step it allowed (measured by the whole
    # workflow's Snakemake start, a start less)
    assert (state["ended"] or "").startswith("budget spent, ") or (state["ended"] is None and last["added"]["last"])
    assert "perfsweep: study decided: measuring ended: decided" in proc.stdout
    assert "perfsweep: study undecided: measuring until decided: budget spent (" in proc.stdout
    # the models table, models.json and the summary say it, in one line per study
    models = pd.read_csv(results / "models" / "undecided" / "models.csv")
    (line,) = models.loc[(models["region"] == "all") & (models["metric"] == "time"), "measuring"]
    assert line.startswith("budget spent (") and ("form undecided" in line or "interval too wide" in line), line
    (entry,) = [m for m in json.loads((results / "models" / "undecided" / "models.json").read_text())
                if m["region"] == "all" and m["metric"] == "time"]
    assert entry["measuring"] == line
    summary = pd.read_csv(results / "tables" / "models_summary.csv").set_index("study")
    assert summary.loc["undecided", "measuring"] == line and summary.loc["decided", "measuring"] == "decided"


@pytest.mark.parametrize("scatter, step", [(0.01, "point"), (0.5, "repetitions")])
def test_a_new_point_where_the_forms_part_beyond_the_noise_else_repetitions(scatter, step):
    # the resamples choose n or n^2 (alike at n = 1000, 20 % apart one step beyond it): with 1 % scatter
    # that is ~25 standard errors of a new point's mean, worth its runs; with 50 % it is < 1: repeat
    from fractions import Fraction
    from perfsweep.modeling.model import Model
    from perfsweep.modeling.terms import Factor, Term
    study = load_config(sweep_config({"n": [200, 400, 600, 800, 1000]})).study("s")
    lin = Model(["n"], [Term((Factor(0, Fraction(1), 0),))], np.array([0.0, 1.0]))
    sq = Model(["n"], [Term((Factor(0, Fraction(2), 0),))], np.array([0.0, 1.0 / 1000]))
    lin.bootstrap = [lin, lin, sq]
    configs = study.configurations()
    times = [[c.params["n"] * (1 - scatter), c.params["n"] * (1 + scatter)] for c in configs]
    cost = {c.config_id: [1.0, 1.0] for c in configs}
    got = decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0)
    if step == "point":
        assert got["point"] == {"n": 1200} and got["id"] == "n=1200" and got["parts"] > 2
    else:
        assert "point" not in got and len(got["repetitions"]) == 3  # as many as fit into the step's 3 s
    assert decide._next_step(study, lin, configs, times, cost, left=0.5, per_step=3.0) is None  # nothing fits


def test_how_measuring_ended_in_one_line():
    from perfsweep.sweep.designs import Decide
    rule = Decide(budget=0.5, lead_share=0.8, precision=0.5)
    spent = {"rounds": [{"spent_core_hours": 0.002, "budget_core_hours": 0.0025}], "ended": "budget spent, form undecided"}
    assert plan.measuring_ended(rule, 0.9, 0.3, True, spent) == "decided"  # the final model decides
    assert plan.measuring_ended(rule, 0.9, 0.7, False, spent) == "decided"  # no validation points: no width asked
    assert plan.measuring_ended(rule, 0.5, 0.3, True, spent) == \
        "budget spent (0.002 of 0.0025 core-hours), form undecided (lead share 50 % < 80 %)"
    assert plan.measuring_ended(rule, 0.9, 0.7, True, spent) == ("budget spent (0.002 of 0.0025 core-hours), interval "
                                                                 "too wide (90 % interval at the validation points 70 % "
                                                                 "of the prediction > 50 %)")
    # the last step the budget allowed, measured with the whole workflow: its estimated core-hours counted
    last = {"rounds": [{"spent_core_hours": 0.001, "budget_core_hours": 0.0025,
                        "added": {"repetitions": ["n=200"], "core_hours": 0.0012, "last": True}}], "ended": None}
    assert plan.measuring_ended(rule, 0.5, 0.3, True, last).startswith("budget spent (0.0022 of 0.0025 core-hours), form")
    assert plan.measuring_ended(rule, 0.5, 0.3, True, {}).endswith("measuring not ended (perfsweep run measures more)")
    assert plan.measuring_ended(rule, float("nan"), 0.3, True, {}).startswith("form undecided (no lead share: no resamples)")


# ---- a busy host: the disturbed configurations measured again (tables.disturbed_runs, busy_configurations)

BUSY_LOAD = {"cpu_time": 0.5, "cpu_wall_ratio": 0.5, "involuntary_switches": 40, "processes": 1, "cores": 2,
             "others_busy_share": 0.9}  # the others kept 1.8 of 2 cores busy: 0.8 of the run's one core


def disturb(results, study, cids, load=BUSY_LOAD, only_new=False):
    """Give the records of configurations ``cids`` a busy host's host_load (``only_new``: those without one)."""
    for cid in cids:
        for path in sorted((results / "runs" / study / cid).glob("rep*.json")):
            rec = json.loads(path.read_text())
            if not (only_new and "host_load" in rec):
                rec["host_load"] = dict(load)
                path.write_text(json.dumps(rec))


def test_why_undecided_names_a_busy_host_first():
    from perfsweep.sweep.designs import Decide
    rule = Decide(budget=0.5, lead_share=0.8, precision=0.5)
    busy = "host busy (3 of 12 configurations' runs mostly disturbed)"
    assert plan.why_undecided(rule, 0.9, 0.3, True, (3, 12)) == busy  # decided by its form, not by its host
    assert plan.why_undecided(rule, 0.5, 0.9, True, (3, 12)) == busy  # the host first: its medians decide nothing
    assert plan.why_undecided(rule, 0.9, 0.3, True, (0, 12)) == "" == plan.why_undecided(rule, 0.9, 0.3, True)
    spent = {"rounds": [{"spent_core_hours": 0.002, "budget_core_hours": 0.0025}], "ended": "budget spent, host busy"}
    assert plan.measuring_ended(rule, 0.9, 0.3, True, spent, (3, 12)) == f"budget spent (0.002 of 0.0025 core-hours), {busy}"
    assert plan.measuring_ended(rule, 0.9, 0.3, True, spent, (0, 12)) == "decided"  # the final runs were not disturbed


def test_the_disturbed_configurations_are_measured_again_before_any_other_step():
    from fractions import Fraction
    from perfsweep.modeling.model import Model
    from perfsweep.modeling.terms import Factor, Term
    study = load_config(sweep_config({"n": [200, 400, 600, 800, 1000]})).study("s")
    lin = Model(["n"], [Term((Factor(0, Fraction(1), 0),))], np.array([0.0, 1.0]))
    sq = Model(["n"], [Term((Factor(0, Fraction(2), 0),))], np.array([0.0, 1.0 / 1000]))
    lin.bootstrap = [lin, lin, sq]
    configs = study.configurations()
    times = [[c.params["n"] * 0.99, c.params["n"] * 1.01] for c in configs]  # a new point would be worth it
    cost = {c.config_id: [1.0, 1.0] for c in configs}
    assert "point" in decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0)
    busy = ["n=800", "n=200", "n=600", "n=1000"]  # most disturbed first
    got = decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=3.0, disturbed=busy)
    assert got == {"repetitions": ["n=800", "n=200", "n=600"], "core_hours": 3.0 / 3600, "why": "disturbed"}
    got = decide._next_step(study, lin, configs, times, cost, left=100.0, per_step=0.5, disturbed=busy)
    assert got["repetitions"] == ["n=800"]  # at least one
    assert decide._next_step(study, lin, configs, times, cost, left=0.5, per_step=3.0, disturbed=busy) is None


@pytest.mark.parametrize("busy_throughout", [False, True])
def test_a_busy_host_makes_a_study_undecided_not_confidently_wrong(tmp_path, capsys, busy_throughout):
    # a study its form decides (exact n * m^2, lead share 80 % asked), whose planned runs at 3 of its
    # configurations the host disturbed: measured again there; a host busy for a while is quiet for the
    # added runs (decided once most of their runs are undisturbed), one busy throughout spends the budget
    sweep = decide_sweep(tmp_path, {"budget": 0.5, "lead_share": 0.8})
    study = sweep.study("s")
    func = lambda p: 0.5 + 0.01 * p["n"] * p["m"] ** 2  # noqa: E731
    rng = np.random.default_rng(5)
    write_records(tmp_path, study, [*study.configurations(), *study.validation], func, rng=rng)
    hit = ["n=200_m=1", "n=600_m=3", "n=1000_m=5"]
    disturb(tmp_path, "s", hit)
    disturb(tmp_path, "s", hit[:1], load={**BUSY_LOAD, "others_busy_share": 0.95})  # the most disturbed
    steps = 0
    while decide.decide_round(sweep, tmp_path)[0]:
        s = state(tmp_path)
        added = s["rounds"][-1]["added"]
        if not s["rounds"][-1]["disturbed"]:  # quiet again and all measured again: the form's own steps
            assert not busy_throughout and added.get("why") != "disturbed", added
            measure_what_was_added(tmp_path, sweep, func, rng)
            steps += 1
            continue
        assert added["why"] == "disturbed" and "point" not in added, added
        assert s["rounds"][-1]["disturbed"] == hit  # the most disturbed first, then in the grid's order
        # up to decide.REMEASURE runs each, one round of them after another (the last step the budget
        # allows: what fits, at least the first)
        assert added["repetitions"] == (hit * decide.REMEASURE)[:len(added["repetitions"])]
        assert added["last"] or len(added["repetitions"]) >= len(hit)
        measure_what_was_added(tmp_path, sweep, func, rng)
        if busy_throughout:
            disturb(tmp_path, "s", hit, only_new=True)
        steps += 1
        assert steps < 40
    out = capsys.readouterr().out
    assert "s: host busy (3 of 25 configurations' runs mostly disturbed): 9 more run(s) at the 3 " \
           "configuration(s) with disturbed runs (" in out
    s = state(tmp_path)
    if busy_throughout:
        assert s["ended"] == "budget spent, host busy" and s["rounds"][-1]["disturbed"] == hit
        assert "study s: measuring ended: budget spent (" in out
        assert "core-hours), host busy (3 of 25 configurations' runs mostly disturbed)" in out
        assert steps >= 2 and s["repetitions"][hit[0]] >= steps and min(s["repetitions"].values()) >= steps - 1
        last = s["rounds"][-1]
        assert last["spent_core_hours"] <= last["budget_core_hours"] + 1e-12
    else:  # 3 disturbed runs of 3: 3 more undisturbed ones (one step) make them half, not more
        busy_steps = [r for r in s["rounds"] if r.get("added", {}).get("why") == "disturbed"]
        assert len(busy_steps) == 1 and busy_steps[0]["added"]["repetitions"] == hit * decide.REMEASURE
        assert all(s["repetitions"][cid] >= 3 for cid in hit) and s["rounds"][-1]["disturbed"] == []
        assert "host busy" not in s["ended"], s["ended"]


LOOP = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


@pytest.mark.slow
@pytest.mark.timing
def test_a_real_sweep_on_a_busy_host_measures_the_disturbed_configurations_again(tmp_path):
    """perfsweep run of the built-in ljmd (p = 1, bound to a core) while a busy loop is pinned to each of
    the runner's cores, for the whole sweep (a real load, stopped in the end): every run's core is shared
    with a loop and the other core kept busy by the other one, so the others take more than a quarter of
    the core the run needs (tables.disturbed_runs). A study its form decides (any lead share of 5 %)
    is then host busy: its disturbed configurations get more repetitions ("why": "disturbed") until the
    budget is spent, and the models table says 'budget spent (...), host busy (...)' in one line. Its own
    sweep: a real load on every core for the whole sweep is its shape. Real timings (marked timing): the
    loops give every run's core a second busy process, so the others' share of the cores a run needs
    stays above the threshold however busy the host is besides (more load only raises it); it measures
    once, and how many steps the budget allowed (its runs' costs are the host's) the assertions allow
    either way. A budget of 0.3 of the planned core-hours (2.4 planned runs' worth; a step spends at most
    half of it, so one run) allows two steps, the second the last (measured by the whole workflow's
    start): 3 Snakemake starts under the loops, where 0.5 took 5; the first step needs its run to cost
    at most 2.4 times the planned runs' mean (here they cost the same within 10 %)."""
    cfg = {"app": {"name": "ljmd", "args": {"steps": 2}}, "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
           "repetitions": 2, "results": "results", "exclusive": False,
           "studies": {"busy": {"vary": {"n": [100, 150, 200, 250]}, "fixed": {"m": 1, "d": 0.5, "c": 2.0, "p": 1},
                                "decide": {"budget": 0.3, "lead_share": 0.05}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    loops = [subprocess.Popen([sys.executable, "-c", LOOP, str(c)]) for c in sorted(os.sched_getaffinity(0))]
    try:
        proc = subprocess.run([str(BIN / "perfsweep"), "run", "c.yaml", "--cores", "2", "--no-report", "--",
                               *NO_FIGURES], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = tmp_path / "results"
    loads = [json.loads(p.read_text())["host_load"] for p in (results / "runs" / "busy").rglob("rep*.json")]
    assert all(h["processes"] == 1 and h["others_busy_share"] is not None for h in loads), loads
    state = json.loads((results / "plan" / "busy" / "decide.json").read_text())
    steps = [r["added"] for r in state["rounds"] if r.get("added")]
    assert steps and all(s["why"] == "disturbed" for s in steps) and state["points"] == [], state
    assert sum(state["repetitions"].values()) >= 1 and len(loads) == 4 * 2 + sum(state["repetitions"].values())
    assert "configuration(s) with disturbed runs (" in proc.stdout
    assert (state["ended"] or "").startswith("budget spent, host busy") or (state["ended"] is None and steps[-1]["last"])
    models = pd.read_csv(results / "models" / "busy" / "models.csv")
    (line,) = models.loc[(models["region"] == "all") & (models["metric"] == "time"), "measuring"]
    assert line.startswith("budget spent (") and "host busy (" in line and "configurations' runs mostly disturbed)" in line, line
    assert f"perfsweep: study busy: measuring until decided: {line}" in proc.stdout
    summary = pd.read_csv(results / "tables" / "models_summary.csv").set_index("study")
    assert summary.loc["busy", "measuring"] == line
