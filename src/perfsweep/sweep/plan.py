"""State of the rounds a sweep has run (``perfsweep run``, perfsweep.sweep.rounds), as the workflow reads it
while it plans (workflow/rules/common.smk) and as ``perfsweep plan`` counts it: the repetitions adaptive
repetitions planned (``repetitions.json``; with variants the most any variant of a study asked) and the points adaptive designs added (``points.json``), per
study under the results tree's plan folder (perfsweep.layout.plan_file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfsweep.errors import UserError
from perfsweep.layout import POINTS_FILE, REPETITIONS_FILE, plan_file, split_variant, variant_study

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


def planned_repetitions(study, results: str | Path) -> dict[str, int]:
    """How many repetitions each configuration of ``study`` needs now: ``min``, or what earlier rounds
    asked for, within [min, max] (a lowered max asks for fewer; the records beyond it stay on disk)."""
    states = _repetition_states(study, results) if study.max_repetitions > study.repetitions else []
    out = {}
    for cfg in study.configurations():
        asked = [n for state in states if isinstance(n := state.get(cfg.config_id), int) and not isinstance(n, bool)]
        out[cfg.config_id] = min(study.max_repetitions, max([study.repetitions, *asked]))
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
    """Give every adaptive study the points its earlier rounds added (the workflow calls this while
    it plans, so that those points are measured and modelled like the others)."""
    for study in sweep.studies:
        if study.design.kind == "adaptive":
            study.added = tuple(read_points(sweep.results, study.name)["points"])
