"""Rounds of a sweep: measure, look at what was measured, plan more, measure again.

``perfsweep run`` runs Snakemake for the run records (target ``runs``), then calls every step of
:data:`ROUND_STEPS`; a step looks at the records of the sweep and writes new work for the DAG into a
state file under ``<results>/plan/<study>/`` (e.g. more repetitions for a configuration whose CV is
still too high). If any step wrote new work, Snakemake runs again, at most :data:`MAX_ROUNDS` times;
then once for the whole workflow (tables, models, figures); a round after which no step could plan more
is that last invocation. A sweep for which no step is active (e.g. a fixed k) runs in one invocation.
The DAG reads the
state files when it is planned (workflow/rules/common.smk), so a round runs only what is new: records
that exist are never measured again or overwritten.

Adaptive repetitions (config ``repetitions: {min: 3, max: 10, until: {cv: 0.05}}``): every
configuration gets ``min`` repetitions first; after each round, a configuration whose repetitions do
not meet the target gets more (rep ids continue: rep3, rep4, ...), up to ``max``. The targets:

- ``until: {cv: x}``: the coefficient of variation (stats.cv_of, as in the variability table) of its
  good repetitions is at most x;
- ``until: {ci: x}``: the distribution-free confidence interval of the median (order statistics, level
  ``level``, default 0.95) lies within +-x of the median (Hoefler and Belli, SC'15, Rule 5 / Sec. 4.2.2);
- ``variability: {policy: remeasure}``: also the CV at most ``variability.cv_threshold``.

After them, measuring until decided (config ``decide:``, perfsweep.steps.decide): a study whose form is
undecided gets more repetitions or points, within its budget.

State: ``<results>/plan/<study>/repetitions.json``, ``{config_id: repetitions it needs now}``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, NamedTuple

from perfsweep.atomic import write_json_atomic
from perfsweep.layout import REPETITIONS_FILE, plan_file
from perfsweep.stats import cv_of, median_ci, min_ci_runs, ok_times
from perfsweep.steps.adapt import next_round
from perfsweep.steps.decide import decide_round
from perfsweep.sweep.plan import add_planned_points, planned_repetitions
from perfsweep.sweep.record import study_records

MAX_ROUNDS = 8


class Planned(NamedTuple):
    """What a round step planned after a round: ``more`` runs, and whether it is ``settled`` (it can
    plan nothing after those runs, so that they are measured in the invocation of the whole workflow)."""

    more: bool
    settled: bool = False


# ---- the targets


def shortfall(times: list[float], until: dict, threshold: float | None, batch: int = 1) -> int | None:
    """None if the times meet the target, else how many repetitions in total to measure next: a batch
    more for a CV (the sample's CV does not shrink with n, but a disturbed repetition weighs less
    among more), as many as the interval's width suggests for the CI (at least len(times) + 1)."""
    n = len(times)
    need = []
    cv = cv_of(times)
    if any(limit is not None and not cv <= limit for limit in (until.get("cv"), threshold)):
        need.append(n + batch)
    if "ci" in until:
        level = until.get("level", 0.95)
        ci = median_ci(times, level)
        if ci is None:
            need.append(min_ci_runs(level))
        else:
            lo, med, hi = ci
            half = max(med - lo, hi - med) / med if med > 0 else math.inf
            if not half <= until["ci"]:  # the interval shrinks about like 1/sqrt(n)
                need.append(math.ceil(n * (half / until["ci"]) ** 2) if math.isfinite(half) else n + 1)
    if not need:
        return None
    return max(n + 1, *need)


def adaptive_repetitions(sweep, results_dir: str | Path) -> Planned:
    """The round step of adaptive repetitions: plan more repetitions for every configuration whose
    repetitions miss the target (repetitions.until, and the CV threshold under policy remeasure), in
    batches of ``min`` (for the CI: as many as the interval's width suggests), up to ``max``.
    Settled once every configuration still to be measured is planned up to ``max`` (the others met
    their target): nothing it could plan after the next runs."""
    results = Path(results_dir)
    threshold = sweep.cv_threshold if sweep.cv_policy == "remeasure" else None
    more, settled = False, True
    for study in sweep.studies:
        if study.max_repetitions <= study.repetitions:
            continue
        planned = planned_repetitions(study, results, decided=False)  # (measuring until decided adds its own)
        measured = study_records(results, study.name)
        new, short, at_max = dict(planned), 0, 0
        for cid, n in planned.items():
            reps = measured.get(cid, {})
            if any(k not in reps for k in range(n)):
                continue  # not all measured in this round
            times = ok_times(reps[k] for k in range(n))
            target = shortfall(times, study.until, threshold, study.repetitions)
            if target is None:
                continue
            if n >= study.max_repetitions:
                at_max += 1
                continue
            short += 1
            failed = n - len(times)  # failed runs count as repetitions but give no time
            new[cid] = min(study.max_repetitions, max(n + 1, target + failed))
        if new != planned or not plan_file(results, study.name, REPETITIONS_FILE).exists():
            write_json_atomic(plan_file(results, study.name, REPETITIONS_FILE), new)
        settled &= all(n >= study.max_repetitions or all(k in measured.get(cid, {}) for k in range(n))
                       for cid, n in new.items())
        if short:
            more = True
            added = sum(new.values()) - sum(planned.values())
            print(f"perfsweep: study {study.name}: {short} configuration(s) miss the repetition target "
                  f"({describe_target(study.until, threshold)}): {added} more run(s)"
                  + (f"; {at_max} at max {study.max_repetitions}" if at_max else ""), flush=True)
        elif at_max:
            print(f"perfsweep: study {study.name}: {at_max} configuration(s) miss the repetition target "
                  f"({describe_target(study.until, threshold)}) at max {study.max_repetitions} repetitions",
                  flush=True)
    return Planned(more, settled)


def describe_target(until: dict, threshold: float | None) -> str:
    parts = []
    if "cv" in until:
        parts.append(f"CV <= {100 * until['cv']:g} %")
    if "ci" in until:
        parts.append(f"median's {100 * until.get('level', 0.95):g} % CI within +-{100 * until['ci']:g} %")
    if threshold is not None:
        parts.append(f"CV <= {100 * threshold:g} % (remeasure)")
    return ", ".join(parts)


adaptive_repetitions.active = lambda sweep: any(s.max_repetitions > s.repetitions for s in sweep.studies)


# Steps called after every Snakemake round: step(sweep, results_dir) -> Planned. A step may say with an
# attribute ``active(sweep) -> bool`` whether it can plan anything for a sweep (when none can, the sweep
# runs in one Snakemake invocation, as without rounds).
def adaptive_designs(sweep, results_dir: str | Path) -> Planned:
    """The round step of adaptive designs (perfsweep.steps.adapt.next_round): more points where the models
    of an adaptive study disagree most. Never settled while a study is adaptive: the models of the
    next points decide whether it adds more."""
    return Planned(next_round(sweep, results_dir), settled=not adaptive_designs.active(sweep))


adaptive_designs.active = lambda sweep: any(s.design.kind == "adaptive" for s in sweep.studies)


def until_decided(sweep, results_dir: str | Path) -> Planned:
    """The round step of measuring until decided (perfsweep.steps.decide.decide_round), after the
    planned rounds: more runs for a study whose form is undecided, within its budget. Settled once
    every such study ended or was given the last runs its budget allows (a sweep without any: always)."""
    more, settled = decide_round(sweep, results_dir)
    return Planned(more, settled=settled)


until_decided.active = decide_round.active

ROUND_STEPS: list[Callable[..., Planned]] = [adaptive_repetitions, adaptive_designs, until_decided]


def run_rounds(run_snakemake: Callable[[list[str]], int], sweep, results_dir: str | Path | None = None,
               max_rounds: int = MAX_ROUNDS) -> int:
    """Measure in rounds: Snakemake with the target ``runs`` (the run records only, so that tables,
    models and figures are not built for records that the next round extends), then every step;
    again while a step planned more (at most ``max_rounds`` rounds); then the whole workflow once. A
    round after which no step can plan more (every step settled) is that invocation of the whole
    workflow. ``run_snakemake(targets)`` returns Snakemake's exit code; so does this."""
    if not any(getattr(step, "active", lambda sweep: True)(sweep) for step in ROUND_STEPS):
        return run_snakemake([])
    results_dir = results_dir or sweep.results
    for rnd in range(1, max_rounds + 1):
        rc = run_snakemake(["runs"])
        if rc != 0:
            break
        add_planned_points(sweep)  # every step sees the sweep as the workflow plans it (the designs' points)
        planned = [step(sweep, results_dir) for step in ROUND_STEPS]  # every step, also after one planned more
        if not any(p.more for p in planned):
            break
        if rnd == max_rounds:
            print(f"perfsweep: stopped after {max_rounds} rounds; run again to measure what was planned",
                  flush=True)
            break
        if all(p.settled for p in planned):
            print(f"perfsweep: round {rnd + 1}, the last: measuring what round {rnd} planned, then the rest",
                  flush=True)
            return run_snakemake([])
        print(f"perfsweep: round {rnd + 1} of at most {max_rounds}: measuring what round {rnd} planned",
              flush=True)
    # also after a failed round: with --keep-going the other studies' tables and models are built
    full = run_snakemake([])
    return rc or full
