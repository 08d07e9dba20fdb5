"""Adaptive designs, round by round: after a round of runs (``perfsweep run``, perfsweep.steps.rounds), model an
adaptive study's run time and add the grid points where the resampled models disagree most, or record why
the study stops (lead terms stable, budget, rounds, grid exhausted). The design itself, which points a
study starts with, is perfsweep.sweep.designs; the state of the rounds is perfsweep.sweep.plan (points.json)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.atomic import write_json_atomic
from perfsweep.errors import ModelingError
from perfsweep.modeling.fit import fit_model
from perfsweep.modeling.pipeline import fit_options
from perfsweep.stats import core_seconds, ok_times
from perfsweep.sweep.plan import points_path, read_points
from perfsweep.sweep.record import study_records


def next_round(sweep, results_dir) -> bool:
    """A round step (perfsweep.steps.rounds): for every adaptive study whose configurations are all
    measured, model its run time and add the points where the models disagree most, or record why
    it stops. True if points were added (another round of runs is needed)."""
    added = False
    for study in sweep.studies:
        if study.design.kind == "adaptive":
            added |= adaptive_round(study, results_dir, sweep.processes, sweep.extra.get("modeling"))
    return added


def adaptive_round(study, results_dir, processes: str = PROCESS_COUNT, modeling: dict | None = None) -> bool:
    """One decision of an adaptive study, written to its points.json: fit the run time on every
    configuration measured so far; stop (lead terms as in the previous round, budget, rounds, grid
    exhausted) or add the ``per_round`` grid points of largest disagreement. True if points were added."""
    state = read_points(results_dir, study.name)
    study = replace(study, added=tuple(state["points"]))
    configs = study.configurations()
    records = study_records(results_dir, study.name)
    names = list(study.vary)
    x, y = [], []
    for cfg in configs:
        recs = records.get(cfg.config_id, {}).values()
        if len(recs) < study.repetitions:
            return False  # not all measured yet (a failed round): nothing to decide on
        times = ok_times(recs)
        if times:
            x.append([float(cfg.params[n]) for n in names])
            y.append(times)
    fitted = sorted(c.config_id for c in configs)
    rounds = state["rounds"]
    if rounds and rounds[-1]["fitted"] == fitted:
        entry = rounds[-1]  # decided on these points before: decide again (the limits may have changed)
        if entry.get("stopped") == "lead terms stable" or entry.get("added") or "lead" not in entry:
            return False
        previous = rounds[-2]["lead"] if len(rounds) >= 2 else None
        model = None
    else:
        model, why = _fit(x, y, names, processes, modeling)
        if model is None:  # no points to add: say why, in the state and to the user
            state["stopped"] = f"no model of the run time ({why})"
            rounds.append({"round": len(rounds), "fitted": fitted, "stopped": state["stopped"], "added": []})
            write_json_atomic(points_path(results_dir, study.name), state)
            print(f"perfsweep: study {study.name}: the adaptive design adds no points: {state['stopped']}", flush=True)
            return False
        entry = {"round": len(rounds), "fitted": fitted, "lead": model.lead(), "model": str(model), "added": []}
        previous = rounds[-1]["lead"] if rounds else None
        rounds.append(entry)
    spent = sum(core_seconds(r, processes) for c in configs for r in records.get(c.config_id, {}).values()) / 3600
    entry["core_hours"] = spent
    done = sum(1 for r in rounds if r.get("added"))
    candidates = [c for c in study.grid() if c.config_id not in set(fitted)]
    stop = ("lead terms stable" if previous is not None and previous == entry["lead"]
            else "budget spent" if study.design.budget is not None and spent >= study.design.budget
            else "all rounds done" if done >= study.design.rounds
            else "grid exhausted" if not candidates else None)
    entry["stopped"] = stop
    if stop is None:
        model = model or _fit(x, y, names, processes, modeling)[0]  # fitted before on the same points
        spread = disagreement(model, np.array([[float(c.params[n]) for n in names] for c in candidates]))
        order = np.argsort(-spread, kind="stable")[:study.design.per_round]
        entry["added"] = [candidates[i].config_id for i in order]
        state["points"] = [*state["points"], *entry["added"]]
    state["stopped"] = stop
    write_json_atomic(points_path(results_dir, study.name), state)
    return bool(entry["added"])


def _fit(x, y, names, processes, modeling=None):
    """The run-time model of the measured points, or None and why not."""
    if len(x) < 2:
        return None, f"{len(x)} configuration(s) with a good run"
    width = max(map(len, y))
    ys = np.array([v + [np.nan] * (width - len(v)) for v in y], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            options = fit_options(processes, "adaptive", points=x, names=names, modeling=modeling)
            return fit_model(np.array(x), ys, names, options=options), ""
        except ModelingError as exc:
            return None, str(exc)


def disagreement(model, x: np.ndarray) -> np.ndarray:
    """How much the candidate models (the model and its resampled ones) disagree at each point: the
    spread of their log predictions (of the predictions relative to their mean where one is <= 0)."""
    preds = np.array([model.predict(x), *(b.predict(x) for b in model.bootstrap)])
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.all(preds > 0):
            return np.std(np.log(preds), axis=0)
        return np.nan_to_num(np.std(preds, axis=0) / np.abs(np.mean(preds, axis=0)), nan=0.0)
