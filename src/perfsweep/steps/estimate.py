"""What a sweep's designs will cost before anything runs (``perfsweep plan``): per study its configurations,
runs (measured and still to run) and estimated core-hours, from the run records of the same launch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfsweep.modeling.fit import MIN_VALUES
from perfsweep.stats import core_seconds
from perfsweep.sweep.designs import max_size
from perfsweep.sweep.plan import add_planned_points, decide_state, planned_repetitions, read_points
from perfsweep.sweep.record import OTHER_LAUNCH, study_records
from perfsweep.sweep.spec import RunSpec


ASSUMED_SECONDS = 1.0  # wall seconds per run and process where no record of the study exists


@dataclass
class StudyPlan:
    study: str
    design: str
    configurations: int
    grid: int
    runs: int
    measured: int
    core_hours: float
    to_run_core_hours: float
    source: str
    max_configurations: int
    max_runs: int  # the design's most configurations, each at its most repetitions
    growth: str = ""  # what may add runs: "its rounds", "adaptive repetitions" or both


def plan_study(sweep, study, seconds: float = ASSUMED_SECONDS, validation: bool = False) -> StudyPlan:
    """Configurations, runs and estimated core-hours of a study's design (with ``validation``: of its
    validation points): per configuration from its earlier run records (wall time x processes) that
    were launched as the config launches it now (RunSpec.launched: a changed app, args or launcher
    makes them no estimate), else the median of the study's such ones, else ``seconds`` per run and
    process."""
    results, processes = sweep.results, sweep.processes
    if validation:
        configs = list(study.validation)
        planned = {c.config_id: study.validation_repetitions for c in configs}
    else:
        configs = study.configurations()
        planned = planned_repetitions(study, results)  # k, or what adaptive repetitions planned so far
    damaged: set[tuple[str, int]] = set()  # set aside and measured again when the sweep runs
    records = study_records(results, study.name, damaged)
    per_run, current, other = {}, {}, 0
    for c in configs:
        recs = list(records.get(c.config_id, {}).values())
        if recs:
            spec = RunSpec.build(sweep, c, 0)
            now = [r for r in recs if spec.launched(r)]
            other += len(recs) - len(now)
            current[c.config_id] = len(now)  # Snakemake runs the others again (the launch is a param)
            if now:
                per_run[c.config_id] = float(np.mean([core_seconds(r, processes) for r in now]))
    fallback = float(np.median(list(per_run.values()))) if per_run else None
    total = to_run = 0.0
    measured = 0
    for c in configs:
        k = planned[c.config_id]
        have = min(k, current.get(c.config_id, 0))
        est = per_run.get(c.config_id)
        if est is None:
            est = fallback if fallback is not None else seconds * float(c.params.get(processes, 1))
        measured += have
        total += k * est
        to_run += (k - have) * est
    if not per_run:
        source = f"assumed {seconds:g} s per run and process (no records {'of this launch ' if other else ''}yet)"
    elif len(per_run) == len(configs):
        source = "records of every configuration"
    else:
        source = f"records of {len(per_run)} configurations, their median for the other {len(configs) - len(per_run)}"
    if other:
        source += f"; {other} records {OTHER_LAUNCH} not used and to run again"
    if damaged:
        source += f"; {len(damaged)} damaged records (perfsweep check-records names them), to be set aside and run again"
    if validation:  # a fixed number of runs at fixed points
        return StudyPlan(study.name, "validation", len(configs), len(configs), sum(planned.values()), measured,
                         total / 3600, to_run / 3600, source, len(configs), sum(planned.values()))
    grid = math.prod(len(v) for v in study.vary.values())
    stopped = read_points(results, study.name).get("stopped") if study.design.kind == "adaptive" else None
    final = stopped is not None and (stopped == "lead terms stable" or stopped.startswith("no model"))
    top = max(len(configs), max_size(study.design, study.vary)) if study.design.kind == "adaptive" and not final else len(configs)
    if stopped:  # others (budget, rounds) are decided again with the config's limits
        source += f"; its rounds stopped: {stopped}"
    growth = " and ".join(why for why, grows in (("its rounds", top > len(configs)),
                                                 ("adaptive repetitions", study.max_repetitions > study.repetitions)) if grows)
    return StudyPlan(study.name, study.design.text(), len(configs), grid, sum(planned.values()), measured,
                     total / 3600, to_run / 3600, source, top, top * study.max_repetitions, growth)


def few_values(vary: dict[str, list[Any]]) -> str:
    """What plan says of a study whose model cannot be fitted: a varied parameter with fewer values
    than the modeler needs (MIN_VALUES); its runs are still measured and tabulated."""
    few = [f"{name} has {len(set(values))}" for name, values in vary.items() if len(set(values)) < MIN_VALUES]
    return f"; no model: {', '.join(few)} values (a model needs at least {MIN_VALUES} of each)" if few else ""


def plan_lines(sweep, seconds: float = ASSUMED_SECONDS) -> list[str]:
    """The text ``perfsweep plan`` prints."""
    add_planned_points(sweep)
    plans = [plan_study(sweep, s, seconds) for s in sweep.studies]
    checks = {s.name: plan_study(sweep, s, seconds, validation=True) for s in sweep.studies if s.validation}
    out = [f"{sweep.source}: {len(plans)} studies; estimated core-hours from the run records in {sweep.results}/ "
           f"(wall time x processes)"]
    for study, p in zip(sweep.studies, plans):
        share = f"{p.configurations} of {p.grid} configurations ({100 * p.configurations / p.grid:.0f} % of the grid)"
        grow = f", up to {p.max_configurations} after its rounds" if p.max_configurations > p.configurations else ""
        upto = f", up to {p.max_runs} with {p.growth}" if p.max_runs > p.runs else ""
        out.append(f"  {p.study}: design {p.design}: {share}{grow}; {p.runs} runs ({p.measured} measured{upto}); "
                   f"{p.core_hours:.4g} core-hours ({p.to_run_core_hours:.4g} still to run); from {p.source}"
                   + few_values(study.vary))
        if study.decide is not None:
            out.append(decide_line(sweep, study, p))
        if study.name in checks:
            v = checks[study.name]
            out.append(f"  {v.study} validation: {v.configurations} point{'s' * (v.configurations != 1)} beyond the grid (measured, never fitted); "
                       f"{v.runs} runs ({v.measured} measured); {v.core_hours:.4g} core-hours ({v.to_run_core_hours:.4g} "
                       f"still to run); from {v.source}")
    everything = [*plans, *checks.values()]
    runs, measured = sum(p.runs for p in everything), sum(p.measured for p in everything)
    val = (f" (validation: {sum(v.configurations for v in checks.values())} points, {sum(v.runs for v in checks.values())} "
           f"runs, {sum(v.core_hours for v in checks.values()):.4g} core-hours)" if checks else "")
    out.append(f"total: {sum(p.configurations for p in everything)} configurations, {runs} runs ({measured} measured), "
               f"{sum(p.core_hours for p in everything):.4g} core-hours ({sum(p.to_run_core_hours for p in everything):.4g} "
               f"still to run){val}")
    if sweep.variants:
        out.append(f"paired measurement: variants {', '.join(sweep.variants)}: every configuration measured once per "
                   f"variant, back to back in each round ({len(sweep.variants)}x the runs and core-hours of a sweep of one)")
    return out


def decide_line(sweep, study, p: StudyPlan) -> str:
    """What ``perfsweep plan`` says of a study measured until decided: the rule, its budget in
    core-hours (the share of the planned core-hours: of the records when its rounds began, else of the
    estimate) and how much of it was spent, or how measuring ended."""
    state = decide_state(sweep.results, study)
    last = state["rounds"][-1] if state["rounds"] else None
    planned = last["planned_core_hours"] if last else p.core_hours
    spent = last["spent_core_hours"] if last else 0.0
    ended = f"; ended: {state['ended']}" if state.get("ended") else ""
    return (f"  {study.name} measuring until decided ({study.decide.text()}): budget {study.decide.budget * planned:.4g} "
            f"core-hours ({study.decide.budget:g} of the planned {planned:.4g}), {spent:.4g} spent{ended}")
