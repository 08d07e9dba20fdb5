"""Measure until decided (config key ``decide: {budget, lead_share, precision}``), a round step of
``perfsweep run`` (perfsweep.steps.rounds) after the planned rounds (the design's configurations at their
planned repetitions, adaptive repetitions and an adaptive design's points included).

After each round, a study whose runs are all measured gets its run time modelled as the workflow's
stages model it (stage_model: the same tables and fit, so the same model as the models table's). It is
*decided* where the model's lead share (the share of the resamples that agree with its lead terms) is
at least ``lead_share`` and, with ``precision`` and validation points, the 90 % interval at those
points is at most ``precision`` of the prediction wide (their median, as the models table's interval
width). The rounds fit with ROUND_BOOTSTRAP resamples (40: the share to +-0.08), which only steer; a
share within CONFIRM of the level or above it is fitted again with the models stage's BOOTSTRAP, which
decides: a study decided here is decided in the models table (with 40 alone one busy sweep's T(n, m, c)
ended decided at 0.90 and the models table said 0.78, undecided), and one short of the level there is
measured further. Nor is it decided where the host was busy: where any fitted configuration (not
validation, not oversubscribed) is *disturbed*, more than half of its successful runs (planned and
added) disturbed (perfsweep.tables.disturbed_runs: other processes took more than
``variability.disturbed`` of the cores the run needed), it was measured on a busy host (its median
comes from its few undisturbed runs, if any: perfsweep.tables.undisturbed_where_any); the study is then
'host busy (k of n configurations' runs mostly disturbed)' (perfsweep.sweep.plan.why_undecided),
whatever its lead share says. A study not decided gets more runs, one step a round, while its
``budget`` lasts: a share of its planned core-hours (the core-hours its records of the planned
repetitions took; the one budget unit is the core-hour, as of an adaptive design's budget). The step:

- with disturbed configurations, before anything else: more repetitions at them, up to REMEASURE each,
  the most disturbed first and round by round (perfsweep.tables.busy_configurations), as many as fit
  into STEP_SHARE of the budget (at least one; ``"why": "disturbed"`` in the step; one repetition each
  made a few disturbed configurations take a round each, and a busy host's sweep reached MAX_ROUNDS
  with the budget unspent): a host busy for a while then measures them again once it is
  not; a host busy throughout spends the budget on them and the study ends undecided ('budget spent,
  host busy (...)') instead of confidently wrong;
- a new point where the leading forms part most relative to the noise (model discrimination, Atkinson
  and Fedorov 1975, T-optimality): among the grid's unmeasured points and those one step beyond its
  largest value of each varied parameter (not the process count: beyond it the ranks would share cores),
  the one where the medians of the log predictions of the resamples that agree with the lead terms and
  of those that do not (all agree: the resamples' spread) lie furthest apart, in standard errors of a
  new point's mean (the study's median CV over sqrt(k)); taken where they lie >= PARTS apart;
- else one more repetition at the configurations whose CV is largest, as many as fit into half of the
  budget (STEP_SHARE; at least one): less scatter, resamples that agree more, narrower intervals. Every
  step costs a Snakemake start more, so a budget is spent in about two steps. Not where no smooth form
  fits (lack_of_fit_of: the best of the forms the data cannot tell apart misses the medians by more
  than their noise, p < MISFIT_P; not judged on a busy host): repetitions narrow the noise, not the
  misfit, so a new point's standard errors count the misfit and, where no point is worth its runs,
  measuring ends with the budget left, ``lack of fit (...)``.

A step that does not fit into what is left of the budget is not taken; when none fits, measuring ends:
``budget spent``. A step after which no run fits is the last: the rounds then measure it with the
whole workflow (a Snakemake start less), and the models table says the budget was spent. The state
(``<results>/plan/<study>/decide.json``, perfsweep.sweep.plan.decide_state) holds the repetitions and points added, every decision (lead share, width, core-hours planned, spent
and allowed) and ``ended``: ``decided``, ``budget spent, form undecided`` (or ``interval too wide``, or ``host
busy``), ``lack of fit (...)``, or ``no model``; the models table says per study in one line how measuring ended
(perfsweep.sweep.plan.measuring_ended).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from perfsweep import layout, tables
from perfsweep.apps import metric_kinds
from perfsweep.apps.registry import BUILTIN_APPS
from perfsweep.atomic import write_json_atomic
from perfsweep.errors import ModelingError, UserError
from perfsweep.layout import DECIDE_FILE, plan_file
from perfsweep.modeling.consensus import fit_form, form_design
from perfsweep.modeling.lead_orders import lead_terms
from perfsweep.modeling.model import Model
from perfsweep.modeling.pipeline import BOOTSTRAP, ROUND_BOOTSTRAP, fit_study_models, oversubscribed_rows
from perfsweep.stats import core_seconds, cv_of, lack_of_fit, ok_times
from perfsweep.sweep.plan import decide_state, measured_repetitions, planned_repetitions, read_points, why_undecided
from perfsweep.sweep.record import study_records

PARTS = 2.0  # a new point is worth its runs where the leading forms part by this many standard errors
STEP_SHARE = 0.5  # of the budget, one step of repetitions spends at most this (each a Snakemake start more)
CONFIRM = 0.15  # a lead share this close to the level, or above it, is fitted again with BOOTSTRAP resamples
MISFIT_P = 0.001  # a lack of fit this unlikely from the noise alone stops repetitions (they cannot decide the form)
REMEASURE = 3  # a step measures a disturbed configuration again up to this many times (outvotes 2 disturbed runs)


def decide_round(sweep, results_dir) -> tuple[bool, bool]:
    """The round step: every study measured until decided that is not, gets its next step of runs.
    (whether runs were added, whether it is settled: no study can be given more after them, as each
    ended or was given the last step its budget allows)."""
    said = [decide_study(sweep, study, results_dir) for study in sweep.studies if study.decide is not None]
    return any(s in ("added", "last") for s in said), all(s in ("ended", "last") for s in said)


decide_round.active = lambda sweep: any(s.decide is not None for s in sweep.studies)


def decide_study(sweep, study, results_dir) -> str:
    """One decision of a study, written to its decide.json: "added" (runs), "last" (the last runs its
    budget allows), "ended", or "waiting" (for the runs of a round)."""
    if study.design.kind == "adaptive" and read_points(results_dir, study.name).get("stopped") is None:
        return "waiting"  # its design still adds points: those are planned rounds
    state = decide_state(results_dir, study)
    planned = measured_repetitions(study, results_dir)
    base = planned_repetitions(study, results_dir, decided=False)
    records = study_records(results_dir, study.name)
    if any(k not in records.get(cid, {}) for cid, n in planned.items() for k in range(n)):
        return "waiting"  # not all measured yet (or a failed round): nothing to decide on
    measured = [[cid, n] for cid, n in sorted(planned.items())]
    limits = [study.decide.budget, study.decide.lead_share, study.decide.precision]
    rounds = state["rounds"]
    if rounds and rounds[-1]["measured"] == measured and rounds[-1]["limits"] == limits:
        return "ended" if state.get("ended") else "waiting"  # decided on these runs under these limits before
    entry = {"round": len(rounds), "measured": measured, "limits": limits}
    rounds.append(entry)
    configs = study.configurations()
    cost = {c.config_id: [core_seconds(r, sweep.processes) for k, r in sorted(records[c.config_id].items())
                          if k < planned[c.config_id]] for c in configs}
    more = {study.point(p).config_id for p in state["points"]}
    plan_s = sum(sum(cost[c.config_id][:base[c.config_id]]) for c in configs if c.config_id not in more)
    spent_s = sum(map(sum, cost.values())) - plan_s  # the added repetitions' and points' runs
    entry.update(planned_core_hours=plan_s / 3600, spent_core_hours=spent_s / 3600,
                 budget_core_hours=study.decide.budget * plan_s / 3600)
    # near the level or above it the models stage's resamples decide (ROUND_BOOTSTRAP's few put the share
    # to +-0.08): a study decided here is decided in the models table, one short of it is measured further
    model, row, over, (busy, fitted) = stage_model(sweep, study, results_dir, planned, study.decide.lead_share)
    if model is None:
        return _end(results_dir, study, state, f"no model of the run time ({row})")
    width = float(row["validation_width"])
    entry.update(lead=model.lead(), lead_share=model.lead_share, width=None if math.isnan(width) else width,
                 disturbed=busy)
    undecided = why_undecided(study.decide, model.lead_share, width, bool(study.validation), (len(busy), fitted))
    if not undecided:
        return _end(results_dir, study, state, "decided")
    times = [ok_times(records[c.config_id][k] for k in range(planned[c.config_id]))
             if c.config_id not in over else [] for c in configs]  # (oversubscribed: not fitted)
    # where no form the data cannot tell apart fits the medians within their noise (not judged on a busy
    # host, whose medians carry its disturbance), more repetitions only make the misfit plainer: new
    # points alone can decide
    fit = None if busy else lack_of_fit_of(model, times)
    if fit is not None:
        entry["lack_of_fit"] = fit
    lacks = fit is not None and fit["p"] < MISFIT_P
    left = entry["budget_core_hours"] * 3600 - spent_s
    cheapest = min((float(np.mean(c)) for c in cost.values() if c), default=math.inf)
    unfitted = {c.params.get(study.processes) for c in configs if c.config_id in over}  # oversubscribed process counts
    step = _next_step(study, model, configs, times, cost, left, STEP_SHARE * entry["budget_core_hours"] * 3600, busy,
                      unfitted, fit["misfit"] if lacks else 0.0)
    if step is None and lacks and left >= cheapest:
        return _end(results_dir, study, state, lack_of_fit_said(fit), undecided)
    if step is None:
        kind = undecided.split(" (")[0]  # form undecided, interval too wide, host busy
        return _end(results_dir, study, state, f"budget spent, {kind}", undecided)
    step["last"] = left - 3600 * step["core_hours"] < cheapest  # no run fits after it: it ends measuring
    entry["added"] = step
    if "point" in step:
        state["points"].append(step["point"])  # measured k times, as the design's points
    for cid in step.get("repetitions", []):
        state["repetitions"][cid] = state["repetitions"].get(cid, 0) + 1
    state["ended"] = None
    write_json_atomic(plan_file(results_dir, study.name, DECIDE_FILE), state)
    if "point" in step:
        what = f"a new point {step['id']} where the leading forms part by {step['parts']:.1f} standard errors"
    elif step["why"] == "cv":
        what = f"one more repetition at the {len(step['repetitions'])} configuration(s) of the largest CV"
    else:
        what = (f"{len(step['repetitions'])} more run(s) at the {len(set(step['repetitions']))} configuration(s) "
                "with disturbed runs")
    print(f"perfsweep: study {study.name}: {undecided}: {what} ({entry['spent_core_hours']:.3g} of "
          f"{entry['budget_core_hours']:.3g} core-hours spent" + (", the last step it allows)" if step["last"] else ")"),
          flush=True)
    return "last" if step["last"] else "added"


def _end(results_dir, study, state: dict, ended: str, undecided: str = "") -> str:
    """Measuring ends: say why, in the state and in one line to the user."""
    state["ended"] = ended
    write_json_atomic(plan_file(results_dir, study.name, DECIDE_FILE), state)
    last = state["rounds"][-1]
    spent = (f" ({last['spent_core_hours']:.3g} of {last['budget_core_hours']:.3g} core-hours)"
             if "budget_core_hours" in last else "")
    if ended.startswith("budget spent"):  # (as measuring_ended says it)
        said = f"budget spent{spent}, {undecided}"
    else:
        said = f"{ended}{spent}" + (f", {undecided}" if undecided else "")
    print(f"perfsweep: study {study.name}: measuring ended: {said}", flush=True)
    return "ended"


def stage_model(sweep, study, results_dir, planned: dict[str, int], confirm_at: float | None = None):
    """The study's run-time model as the workflow's stages make it of the runs ``planned`` (config id ->
    repetitions; the validation points' included): the runs, variability and aggregate tables
    (perfsweep.tables), every (region, metric) fitted together (perfsweep.modeling.pipeline, whose
    resamples depend on the sets fitted together) with ROUND_BOOTSTRAP resamples; with ``confirm_at`` (a
    lead share level) a share within CONFIRM of it or above it, on a host not busy, is fitted again from
    the same tables with BOOTSTRAP. (model, its models-table row, the oversubscribed config ids, (the
    disturbed fitted config ids, most disturbed first, and how many are fitted):
    perfsweep.tables.busy_configurations), or (None, why not, those ids, ([], 0))."""
    paths = [layout.record(results_dir, study.name, cid, k) for cid, n in planned.items() for k in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs, ranks, regions = tables.collect(paths, [c.config_id for c in study.validation])
        var = tables.variability(runs, study.varied, sweep.cv_threshold, sweep.disturbed)
        try:
            agg = tables.aggregate(runs, ranks, regions, study.varied, var, sweep.cv_policy, None, sweep.processes,
                                   sweep.disturbed, metric_kinds.declared(study.app))
        except UserError as exc:  # no successful run
            return None, str(exc), set(), ([], 0)
        over = set(agg.loc[oversubscribed_rows(agg, sweep.processes, study.varied), "config_id"])
        busy = tables.busy_configurations(agg)
        try:
            model, row = _time_model(sweep, study, agg, ROUND_BOOTSTRAP)
            if (model is not None and confirm_at is not None and not busy[0]
                    and model.lead_share >= confirm_at - CONFIRM):
                model, row = _time_model(sweep, study, agg, BOOTSTRAP)
        except ModelingError as exc:
            return None, str(exc), over, ([], 0)
    return model, row, over, busy


def _time_model(sweep, study, agg, bootstrap: int):
    """The run-time model of the aggregate ``agg`` with ``bootstrap`` resamples and its models-table row,
    or (None, why not)."""
    tab, mods, _ = fit_study_models(agg, study.name, study.varied, study.fixed, sweep.processes,
                                    bootstrap=bootstrap, design=study.design.kind,
                                    modeling=sweep.extra.get("modeling"))
    main = tab[(tab["region"] == "all") & (tab["metric"] == "time")]
    if not len(main) or not main.iloc[0]["model"]:
        return None, (main.iloc[0]["reason"] if len(main) else "no run time measured")
    (entry,) = [m for m in mods if m.get("region") == "all" and m.get("metric") == "time"]
    return Model.from_dict(entry["model"]), main.iloc[0]


def _next_step(study, model, configs, times, cost: dict, left: float, per_step: float,
               disturbed: list[str] | tuple[str, ...] = (), unfitted: set | frozenset = frozenset(),
               misfit: float = 0.0) -> dict | None:
    """The next runs within ``left`` core-seconds: with ``disturbed`` configurations (config ids, most
    disturbed first), up to REMEASURE more repetitions each ("why": "disturbed"), else a new point where the
    leading forms part by >= PARTS standard errors, else one more repetition at the configurations of
    the largest CV (of those with ``times``: those fitted; "why": "cv"); repetitions at as many as fit
    into ``per_step`` (at least one); None if none fits. No new point has a process count in ``unfitted``
    (those whose runs were oversubscribed: not fitted, so they decide no form). ``misfit``: the model's
    lack of fit where it is beyond the noise (log units, stats.lack_of_fit): a new point's mean strays
    from every smooth form by that too, so the standard errors count it, and no repetitions are taken
    (they narrow the noise, not the misfit): None unless a point is worth its runs."""
    names = list(study.vary)
    per_run = {cid: float(np.mean(c)) for cid, c in cost.items() if c}
    if disturbed:  # before any other step: the medians they would be chosen on are a busy host's; up to
        # REMEASURE runs each in one step (the most disturbed first, round by round), so that a few
        # disturbed configurations do not take a round each (each a Snakemake start; at most MAX_ROUNDS)
        known = [cid for cid in disturbed if cid in per_run]
        return _repetitions(known * REMEASURE, per_run, left, per_step, "disturbed")
    cvs = [cv_of(t) for t in times]
    noise = float(np.nanmedian(cvs)) if np.isfinite(cvs).any() else 0.1
    cands = [c for c in candidates(study, {c.config_id for c in configs})
             if c.params.get(study.processes) not in unfitted]  # an oversubscribed point is not fitted
    if cands and model.bootstrap:
        xc = np.array([[float(c.params[n]) for n in names] for c in cands])
        parts = discrimination(model, xc) / math.hypot(max(noise, 1e-3) / math.sqrt(study.repetitions), misfit)
        rate = _cost_rate(model, configs, per_run, names, study.processes)
        for i in np.argsort(-parts, kind="stable"):
            if not parts[i] >= PARTS:
                break
            need = study.repetitions * rate * float(model.predict(xc[i:i + 1])[0]) * float(cands[i].params.get(study.processes, 1))
            if need <= left:
                return {"point": {n: cands[i].params[n] for n in names}, "id": cands[i].config_id,
                        "parts": float(parts[i]), "core_hours": need / 3600}
    if misfit:
        return None
    order = sorted((i for i in range(len(configs)) if times[i]), key=lambda i: -cvs[i] if np.isfinite(cvs[i]) else math.inf)
    return _repetitions([configs[i].config_id for i in order], per_run, left, per_step, "cv")


def lack_of_fit_of(model, times: list[list[float]]) -> dict[str, float] | None:
    """The lack of fit to the medians of the best of the forms the data cannot tell apart (the model's,
    its alternatives' and its resamples' forms), against the medians' noise (stats.lack_of_fit; ``times``:
    each fitted configuration's repeated times, [] for those not fitted), or None. Each form's terms are
    fitted to the medians again by relative least squares, as the residuals are judged (in log time): the
    model's own coefficients come out of its search, which may trade the smallest medians' few percent
    for the largest. The best form's test says whether any smooth form fits: one form's misfit alone
    would also flag a form that the noise chose over a fitting one."""
    y, x = np.asarray(model.values, dtype=float), np.asarray(model.points, dtype=float)
    if not len(y) or np.any(y <= 0):
        return None
    y = 1.0 / y if model.reciprocal else y  # a rate's model is 1 / f(x)
    runs = [t for t in times if t]
    best = None
    for terms in dict.fromkeys(tuple(m.terms) for m in (model, *model.alternatives, *model.bootstrap)):
        a = form_design(x, terms)
        coef = fit_form(a, y, 1.0 / y ** 2, positive=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            got = lack_of_fit(np.log(y / (a @ coef)), len(coef), runs)
        if got is not None and (best is None or got["p"] > best["p"]):
            best = got
    return best


def lack_of_fit_said(fit: dict[str, float]) -> str:
    """How measuring ended where only the misfit stood in the way, in a few words."""
    return (f"lack of fit (the medians stray {100 * fit['misfit']:.1f} % from the model, their noise "
            f"{100 * fit['noise']:.1f} %: more repetitions cannot decide the form)")


def _repetitions(order: list[str], per_run: dict, left: float, per_step: float, why: str) -> dict | None:
    """One more repetition at the configurations of ``order``, from its first, as many as fit into
    ``per_step`` core-seconds (at least one) and ``left``; None if not even the first fits."""
    chosen, need = [], 0.0
    for cid in order:
        c = per_run.get(cid, 0.0)
        if need + c > left or (chosen and need + c > per_step):
            break
        chosen.append(cid)
        need += c
    return {"repetitions": chosen, "core_hours": need / 3600, "why": why} if chosen else None


def _cost_rate(model, configs, per_run: dict, names: list[str], processes: str) -> float:
    """Core-seconds per second of predicted time and process (the launch's overhead included): their
    median over the measured configurations."""
    rates = []
    for c in configs:
        if c.config_id in per_run:
            pred = float(model.predict(np.array([[float(c.params[n]) for n in names]]))[0])
            if pred > 0:
                rates.append(per_run[c.config_id] / (pred * float(c.params.get(processes, 1))))
    return float(np.median(rates)) if rates else 1.0


def candidates(study, measured: set[str]) -> list:
    """The points a new step may measure: the grid's and those one step beyond its largest value of a
    varied parameter (the last step between its two largest values; not of the process count), except
    those measured and the validation points, of values the built-in app can run."""
    axes = []
    for name, values in study.vary.items():
        top = sorted(values)
        beyond = [] if name == study.processes else [round(top[-1] + (top[-1] - top[-2]), 10)]
        if beyond and all(isinstance(v, int) for v in values):
            beyond = [int(beyond[0])]
        axes.append([*values, *beyond])
    skip = measured | {c.config_id for c in study.validation}
    builtin = BUILTIN_APPS.get(study.app.get("name")) if "name" in study.app else None
    out = []
    for values in itertools.product(*axes):
        cfg = study.point(dict(zip(study.vary, values)))
        if cfg.config_id in skip:
            continue
        if builtin is not None:
            try:
                builtin.check(cfg.params)
            except ValueError:
                continue
        out.append(cfg)
    return out


def discrimination(model, x: np.ndarray) -> np.ndarray:
    """How far apart the leading forms' predictions lie at each point of ``x``: the distance between the
    medians of the log predictions of the resamples that agree with the model's lead terms and of those
    that do not; where all agree (or none), the standard deviation of all resamples' log predictions
    (perfsweep.steps.adapt.disagreement). 0 where a prediction is not positive."""
    lead = lead_terms(model)
    agree = [b for b in model.bootstrap if lead_terms(b) == lead]
    other = [b for b in model.bootstrap if lead_terms(b) != lead]
    with np.errstate(divide="ignore", invalid="ignore"):
        if agree and other:
            a = np.log(np.array([b.predict(x) for b in agree]))
            o = np.log(np.array([b.predict(x) for b in other]))
            out = np.abs(np.median(a, axis=0) - np.median(o, axis=0))
        else:
            out = np.std(np.log(np.array([b.predict(x) for b in model.bootstrap])), axis=0)
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)
