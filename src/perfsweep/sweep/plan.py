"""State of the rounds a sweep has run (``perfsweep run``, perfsweep.steps.rounds), as the workflow reads it
while it plans (workflow/rules/common.smk) and as ``perfsweep plan`` counts it: the repetitions adaptive
repetitions planned (``repetitions.json``; with variants the most any variant of a study asked), the
points adaptive designs added (``points.json``) and the repetitions and points measuring until decided
added (``decide.json``), per study under the results tree's plan folder (perfsweep.layout.plan_file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfsweep.errors import UserError
from perfsweep.layout import DECIDE_FILE, POINTS_FILE, REPETITIONS_FILE, plan_file, split_variant, variant_study

PLAN_SCHEMA = "perfsweep.plan/1"


def read_plan(results: str | Path, study: str, name: str, default: dict | None = None, strict: bool = False) -> dict:
    """A state file of earlier rounds (``<results>/plan/<study>/<name>``, a JSON object); ``default`` ({})
    if there is none. One that cannot be read or is not an object is planned anew (``default``), or with
    ``strict`` (state that must not be lost silently) a UserError naming it."""
    path = plan_file(results, study, name)
    default = {} if default is None else default
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        if strict:
            raise UserError(f"{path}: not a readable plan file ({exc}); move it away to start anew") from None
        return default
    if not isinstance(data, dict):
        if strict:
            raise UserError(f"{path}: not a perfsweep plan file (not a JSON object); move it away to start anew")
        return default
    return data


def planned_repetitions(study, results: str | Path, decided: bool = True) -> dict[str, int]:
    """How many repetitions each configuration of ``study`` needs now: ``min``, or what earlier rounds
    asked for, within [min, max] (a lowered max asks for fewer; the records beyond it stay on disk);
    with ``decided``, plus those measuring until decided added (decide.json)."""
    states = _repetition_states(study, results) if study.max_repetitions > study.repetitions else []
    extra = decide_state(results, study)["repetitions"] if decided and study.decide is not None else {}
    out = {}
    for cfg in study.configurations():
        asked = [n for state in states if isinstance(n := state.get(cfg.config_id), int) and not isinstance(n, bool)]
        more = extra.get(cfg.config_id, 0)
        more = more if isinstance(more, int) and not isinstance(more, bool) and more > 0 else 0
        out[cfg.config_id] = min(study.max_repetitions, max([study.repetitions, *asked])) + more
    return out


def _repetition_states(study, results: str | Path) -> list[dict]:
    """The repetitions earlier rounds asked for: the study's; with variants (paired measurement) every
    variant's of the same study, so that all variants measure the same rounds (the most any asked)."""
    base, variant = split_variant(study.name)
    if variant is None:
        return [read_plan(results, study.name, REPETITIONS_FILE)]
    plans = plan_file(results, study.name, REPETITIONS_FILE).parent.parent
    return [read_plan(results, d.name, REPETITIONS_FILE) for d in sorted(plans.glob(variant_study(base, "*")))]


def measured_repetitions(study, results: str | Path) -> dict[str, int]:
    """How many runs each configuration the workflow measures needs now: planned_repetitions of the
    design's configurations, and the fixed count of the validation points (never adaptive)."""
    return {**planned_repetitions(study, results), **{c.config_id: study.validation_repetitions for c in study.validation}}


# ---- adaptive designs: the points earlier rounds added

def points_path(results: str | Path, study: str) -> Path:
    return plan_file(results, study, POINTS_FILE)


def read_points(results: str | Path, study: str) -> dict[str, Any]:
    """The state of a study's adaptive rounds (a new one if there is none); UserError if it is damaged."""
    state = read_plan(results, study, POINTS_FILE, strict=True,
                      default={"schema": PLAN_SCHEMA, "study": study, "points": [], "rounds": []})
    points = state.get("points")
    if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
        raise UserError(f"{points_path(results, study)}: not a perfsweep plan file ('points' is not a list of "
                        f"configuration ids); move it away to start the design anew")
    state.setdefault("rounds", [])
    return state


def add_planned_points(sweep) -> None:
    """Give every adaptive study the points its earlier rounds added, and every study measured until
    decided the points that added (the workflow calls this while it plans, so that those points are
    measured and modelled like the others)."""
    for study in sweep.studies:
        if study.design.kind == "adaptive":
            study.added = tuple(read_points(sweep.results, study.name)["points"])
        if study.decide is not None:
            study.more = tuple(decide_state(sweep.results, study)["points"])


# ---- measuring until decided (perfsweep.steps.decide): what it added, how much it spent, why it ended

def decide_state(results: str | Path, study) -> dict[str, Any]:
    """The state of measuring ``study`` until decided (a new one if there is none): the ``repetitions``
    added per configuration, the ``points`` added ({varied parameter: value}; those whose parameters
    are no longer varied are left out), the ``rounds`` and, once it ended, ``ended``; UserError if it is
    damaged."""
    state = read_plan(results, study.name, DECIDE_FILE, strict=True,
                      default={"schema": PLAN_SCHEMA, "study": study.name, "repetitions": {}, "points": [], "rounds": []})
    reps, points = state.setdefault("repetitions", {}), state.setdefault("points", [])
    if not isinstance(reps, dict) or not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise UserError(f"{plan_file(results, study.name, DECIDE_FILE)}: not a perfsweep plan file ('repetitions' "
                        "is not an object or 'points' not a list of points); move it away to start anew")
    state["points"] = [p for p in points if set(p) == set(study.vary)]
    state.setdefault("rounds", [])
    return state


def why_undecided(decide, share: float, width: float, validated: bool, busy: tuple[int, int] = (0, 0)) -> str:
    """'' if a time model of lead share ``share`` and a 90 % interval ``width`` wide at the validation
    points (over the prediction; ``validated``: the study has them) is decided under ``decide`` (a
    perfsweep.sweep.designs.Decide), else why not, e.g. 'form undecided (lead share 62 % < 80 %)'.
    ``busy``: how many of the fitted configurations are disturbed (most of their runs disturbed by the
    host, perfsweep.tables.busy_configurations) and of how many: any makes it 'host busy (...)'."""
    # the host first: a lead share or an interval computed from a busy host's medians decides nothing
    # (confidently wrong where it looks decided), and the step it asks for (the disturbed configurations
    # measured again) comes before any other, so the reason said is the one the step answers
    if busy[0]:
        return f"host busy ({busy[0]} of {busy[1]} configurations' runs mostly disturbed)"
    if share != share:  # NaN: a model without resamples (one repetition), whose form nothing decides
        return "form undecided (no lead share: no resamples)"
    if not share >= decide.lead_share:
        return f"form undecided (lead share {100 * share:.0f} % < {100 * decide.lead_share:g} %)"
    if decide.precision is not None and validated and not width <= decide.precision:
        return (f"interval too wide (90 % interval at the validation points {100 * width:.0f} % of the prediction "
                f"> {100 * decide.precision:g} %)")
    return ""


def measuring_ended(decide, share: float, width: float, validated: bool, state: dict[str, Any],
                    busy: tuple[int, int] = (0, 0)) -> str:
    """How measuring until decided ended, in one line, for the final model (lead share ``share``,
    interval ``width``, its disturbed configurations ``busy``: why_undecided) and the state of its rounds
    (decide_state): 'decided', or 'budget spent (x of y core-hours), form undecided (...)' (or 'host
    busy (...)'), or what else ended it."""
    undecided = why_undecided(decide, share, width, validated, busy)
    if not undecided:
        return "decided"
    last = state.get("rounds", [{}])[-1] if state.get("rounds") else {}
    ended = state.get("ended") or ""
    step = last.get("added") or {}
    if ended.startswith("budget spent") or (not ended and step.get("last")):  # (the last step: measured after the rounds)
        spent = last.get("spent_core_hours", float("nan")) + (step.get("core_hours", 0.0) if not ended else 0.0)
        return f"budget spent ({spent:.3g} of {last.get('budget_core_hours', float('nan')):.3g} core-hours), {undecided}"
    if ended == "decided":  # the rounds' own fit (of the run records) was decided, the final one is not
        return f"{undecided}, though decided when measuring ended"
    if ended:
        return f"{ended}, {undecided}"
    return f"{undecided}; measuring not ended (perfsweep run measures more)"
