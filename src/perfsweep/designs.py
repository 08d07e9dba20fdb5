"""Experiment designs: which configurations of a study's grid are measured.

Usage::

    study.design                      # Design(kind="sparse", base={}, extra=2, ...), from the config
    study.configurations()            # the design's configurations (ids as in the full grid)
    add_planned_points(sweep)         # + the points earlier adaptive rounds added (<results>/plan/...)
    next_round(sweep, "results")      # after a round of runs: adaptive studies add points (True if any)

Designs (config key ``design:`` per study, or at the top level as every study's default):

- ``full``: every configuration of the grid (the product of the varied values), the default.
- ``sparse``: per varied parameter one line of all its values through a base point (the smallest
  value of every other parameter, or ``base:``: a mapping, ``centre`` for the middle value of every
  parameter, ``largest`` for the largest), as Extra-P's sparse modeler measures (Ritter et al., IPDPS
  2020), plus ``extra`` points off the lines. Lines through the smallest values are the cheapest; where
  the smallest values leave the application mostly fixed overhead, they show little of the other
  parameters' effects; lines through the centre model the grid better, lines through the largest
  values the configurations beyond it (README, Designs). The lines determine every parameter's own terms;
  how the terms combine (sums or products: the candidate models that agree on the lines) is seen only
  off the lines. The extra points are chosen to separate those candidates: a model's products of
  parameters are, relative to the base, products of the parameters' distances from it, so every extra
  point is the one whose vector of such products (every subset of two or more parameters) has the
  largest part not spanned by the points chosen before (the first is the corner opposite the base);
  once they span every product, the one where the least-squares estimates of the products'
  coefficients are least certain (largest f' (F'F)^+ f over the chosen points' vectors F): a greedy
  D-optimal choice for the interaction coefficients (Wynn's sequential rule). Through the centre of
  3 parameters, 8 extra points are the 8 corners of the grid: with the lines, a face-centred central
  composite design. 1 + sum(values - 1) + extra configurations: linear in the number of parameters,
  where the grid is exponential.
- ``adaptive``: starts as ``sparse``; after each round of runs (``perfsweep run``) the study's run
  time is modelled (perfsweep.modeling, with resampled repetitions), and the ``per_round`` grid points
  where the resampled models disagree most (largest spread of their log predictions) are added. It
  stops when the model's lead terms are the same as after the previous round, when the study has spent
  ``budget`` core-hours, after ``rounds`` rounds, or when the grid is exhausted. The added points are
  kept in ``<results>/plan/<study>/points.json``, which the workflow reads while it plans.

A design's configurations keep their ids from the full grid, so switching between designs, or adding
points, reruns nothing that was measured.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.errors import UserError
from perfsweep.records import OTHER_LAUNCH, ok_times, study_records, write_json_atomic
from perfsweep.rounds import plan_file, planned_repetitions, read_plan

KINDS = ("full", "sparse", "adaptive")
CENTRE = ("centre", "center")  # base: every parameter at its middle value
LARGEST = "largest"  # base: every parameter at its largest value
MAX_CANDIDATES = 200_000  # grid points an extra point or an adaptive round chooses from
PLAN_SCHEMA = "perfsweep.plan/1"


@dataclass(frozen=True)
class Design:
    kind: str = "full"
    base: dict[str, Any] = field(default_factory=dict)  # the lines' common point (default: smallest values)
    extra: int = 2  # points off the lines (sparse, adaptive start)
    per_round: int = 2  # points an adaptive round adds
    rounds: int = 3  # adaptive rounds that add points, at most
    budget: float | None = None  # core-hours a study may spend (adaptive), None: no limit

    def text(self) -> str:
        if self.kind == "full":
            return "full"
        from perfsweep.config import format_value

        through = f" through {{{', '.join(f'{k} = {format_value(v)}' for k, v in self.base.items())}}}" if self.base else ""
        out = f"{self.kind} (lines{through} + {self.extra} extra"
        if self.kind == "adaptive":
            out += f", +{self.per_round} per round, <= {self.rounds} rounds"
            out += f", budget {self.budget:g} core-h" if self.budget is not None else ""
        return out + ")"


def parse_design(value: Any, source: str, where: str, vary: dict[str, list[Any]]) -> Design:
    """A Design from the config's ``design:`` (a kind, or a mapping with ``kind:``); ConfigError if wrong."""
    from perfsweep.config import ConfigError, format_value

    named = isinstance(value, str)
    value = {"kind": value} if named else value
    kind = value.get("kind")
    if kind not in KINDS:
        raise ConfigError(source, where if named else f"{where}.kind", f"{kind!r} is not a design (one of: "
                          f"{', '.join(KINDS)})" if kind is not None else f"no kind: give one of {', '.join(KINDS)}")
    for key in ("per_round", "rounds", "budget"):
        if key in value and kind != "adaptive":
            raise ConfigError(source, f"{where}.{key}", f"only for design kind adaptive, not {kind}")
    if kind == "full" and ("base" in value or "extra" in value):
        raise ConfigError(source, f"{where}.{'base' if 'base' in value else 'extra'}", "only for sparse or adaptive designs")
    base = value.get("base")
    base = {} if base is None else base  # base: left empty, the default
    if base in CENTRE:  # the middle value of every parameter (of an even count, the lower middle one)
        base = {name: sorted(values)[(len(values) - 1) // 2] for name, values in vary.items()}
    elif base == LARGEST:
        base = {name: max(values) for name, values in vary.items()}
    if not isinstance(base, dict):
        raise ConfigError(source, f"{where}.base", f"{base!r} is not a base: give centre, largest, or a mapping "
                                                   "of varied parameters to one of their values each")
    for name, v in base.items():
        if name not in vary:
            raise ConfigError(source, f"{where}.base.{name}", f"{name!r} is not varied in this study "
                                                              f"(varied: {', '.join(vary)})")
        if v not in vary[name]:
            raise ConfigError(source, f"{where}.base.{name}", f"{format_value(v)} is not one of its values "
                                                              f"({', '.join(map(format_value, vary[name]))})")
    grid = math.prod(len(v) for v in vary.values())
    if grid > MAX_CANDIDATES and (kind == "adaptive" or (kind == "sparse" and value.get("extra", 2) > 0)):
        raise ConfigError(source, where, f"a grid of {grid:,} configurations is too large to choose points from "
                                         f"(at most {MAX_CANDIDATES:,}); use kind: sparse with extra: 0, or fewer values")
    budget = value.get("budget")
    if budget is not None and not math.isfinite(budget):
        raise ConfigError(source, f"{where}.budget", f"{budget!r} is not a finite number of core-hours")
    off_lines = grid - (1 + sum(len(v) - 1 for v in vary.values()))  # the most extra points there are
    return Design(kind=kind, base=base, extra=min(int(value.get("extra", 2)), off_lines),
                  per_round=int(value.get("per_round", 2)), rounds=int(value.get("rounds", 3)),
                  budget=None if budget is None else float(budget))


def design_size(design: Design, vary: dict[str, list[Any]]) -> int:
    """Configurations the design starts with (without the points adaptive rounds add)."""
    full = math.prod(len(v) for v in vary.values())
    if design.kind == "full":
        return full
    return min(full, 1 + sum(len(v) - 1 for v in vary.values()) + design.extra)


def max_size(design: Design, vary: dict[str, list[Any]]) -> int:
    """Configurations the design may reach (adaptive: after all its rounds)."""
    full = math.prod(len(v) for v in vary.values())
    grow = design.rounds * design.per_round if design.kind == "adaptive" else 0
    return min(full, design_size(design, vary) + grow)


# --- the points of a design, as index tuples into the varied values (grid order = lexicographic)

def _base_index(design: Design, vary: dict[str, list[Any]]) -> tuple[int, ...]:
    """Indices of the base point: the configured base, else the smallest value of every parameter."""
    out = []
    for name, values in vary.items():
        target = design.base.get(name, min(values))
        out.append(values.index(target))
    return tuple(out)


def line_points(design: Design, vary: dict[str, list[Any]]) -> list[tuple[int, ...]]:
    base = _base_index(design, vary)
    points = {base}
    for i, values in enumerate(vary.values()):
        for j in range(len(values)):
            points.add(base[:i] + (j,) + base[i + 1:])
    return sorted(points)


def _position(vary: dict[str, list[Any]], base: tuple[int, ...], index: np.ndarray) -> np.ndarray:
    """Signed distance from the base per parameter, in [-1, 1]: by rank among the sorted values."""
    cols = []
    for i, values in enumerate(vary.values()):
        rank = np.argsort(np.argsort(values))  # rank of each value among the sorted values
        span = max(1, len(values) - 1)
        cols.append((rank[index[:, i]] - rank[base[i]]) / span)
    return np.array(cols).T


def interaction_features(vary: dict[str, list[Any]], base: tuple[int, ...], index: np.ndarray) -> np.ndarray:
    """Per point, the products of the distances from the base over every subset of >= 2 parameters
    (what separates sums from products of the parameters' terms; zero on the lines)."""
    u = _position(vary, base, index)
    q = u.shape[1]
    subsets = [s for r in range(2, q + 1) for s in itertools.combinations(range(q), r)]
    if len(subsets) > 64:  # many parameters: the pairs and the product of all
        subsets = [s for s in subsets if len(s) == 2] + [tuple(range(q))]
    return np.array([np.prod(u[:, list(s)], axis=1) for s in subsets]).T if subsets else np.zeros((len(u), 0))


def _grid_index(vary: dict[str, list[Any]]) -> np.ndarray:
    sizes = [len(v) for v in vary.values()]  # at most MAX_CANDIDATES (parse_design)
    return np.array(list(itertools.product(*(range(n) for n in sizes))), dtype=int).reshape(-1, len(sizes))


def extra_points(design: Design, vary: dict[str, list[Any]], taken: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``design.extra`` points off the lines, greedily the one whose interaction features have the
    largest part orthogonal to those of the points chosen before, once those span them the one of the
    largest prediction variance under them (ties: the cheaper, nearer the base)."""
    if design.extra <= 0 or len(vary) < 2:
        return []
    base = _base_index(design, vary)
    cand = _grid_index(vary)
    used = set(taken)
    cand = cand[[tuple(c) not in used for c in cand]]
    feats = interaction_features(vary, base, cand)
    nearness = np.abs(_position(vary, base, cand)).sum(axis=1)
    chosen: list[tuple[int, ...]] = []
    picked = np.zeros((0, feats.shape[1]))  # the chosen points' interaction features
    for _ in range(min(design.extra, len(cand))):
        gram = picked.T @ picked
        info = np.linalg.pinv(gram)  # zero before the first point
        crit = np.linalg.norm(feats - feats @ gram @ info, axis=1)  # the part not spanned
        if len(picked) and crit.max() <= 1e-9:  # spanned: where the interaction estimates are least certain
            crit = np.einsum("ij,jk,ik->i", feats, info, feats)
        order = np.lexsort((nearness, -np.round(crit, 9)))  # largest criterion, then nearest the base
        pick = int(order[0])
        picked = np.vstack([picked, feats[pick]])
        chosen.append(tuple(int(v) for v in cand[pick]))
        keep = np.ones(len(cand), bool)
        keep[pick] = False
        cand, feats, nearness = cand[keep], feats[keep], nearness[keep]
    return chosen


# the configurations of a study are asked for many times while Snakemake plans: computed once per study
_CACHE: dict[str, list] = {}


def design_configurations(study) -> list:
    """The configurations of ``study`` (a perfsweep.config.Study) under its design, in grid order,
    with the points adaptive rounds added (``study.added``: config ids)."""
    from perfsweep.config import Configuration

    key = repr((study.name, study.vary, sorted(study.fixed.items()), study.design, study.added))
    if key in _CACHE:
        return _CACHE[key]
    names = list(study.vary)
    index = line_points(study.design, study.vary)
    index += extra_points(study.design, study.vary, index)
    if study.added:  # ids of points no longer in the grid (its values changed) are left out
        grid = grid_ids(study.vary)
        index += [grid[cid] for cid in study.added if cid in grid]
    index = sorted(set(index))
    out = []
    for idx in index:
        params = dict(study.fixed)
        params.update((n, study.vary[n][j]) for n, j in zip(names, idx))
        out.append(Configuration(study.name, config_id(study.vary, idx), params))
    _CACHE[key] = out
    return out


def config_id(vary: dict[str, list[Any]], index: tuple[int, ...]) -> str:
    from perfsweep.config import format_value

    return "_".join(f"{n}={format_value(vals[j])}" for (n, vals), j in zip(vary.items(), index))


def grid_ids(vary: dict[str, list[Any]]) -> dict[str, tuple[int, ...]]:
    """config id -> grid index of every point of the grid."""
    return {config_id(vary, tuple(i)): tuple(int(j) for j in i) for i in _grid_index(vary)}


# --- state of adaptive rounds: <results>/plan/<study>/points.json

POINTS_FILE = "points.json"


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


# --- run records (perfsweep.records.study_records): what was measured, at what cost

def core_seconds(record: dict[str, Any], processes: str) -> float:
    """The cores a run held times its launch's wall time."""
    wall = record.get("wall_time")
    p = (record.get("parameters") or {}).get(processes, 1)
    ok = isinstance(wall, (int, float)) and math.isfinite(wall) and isinstance(p, (int, float))
    return float(wall) * float(p) if ok else 0.0


# --- adaptive rounds

def next_round(sweep, results_dir) -> bool:
    """A round step (perfsweep.rounds): for every adaptive study whose configurations are all
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
    import warnings

    from perfsweep.modeling import ModelingError, fit_model
    from perfsweep.modeling.pipeline import fit_options

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


# --- perfsweep plan: what a sweep's designs will cost, before anything runs

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
    from perfsweep.runner import RunSpec

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
    from perfsweep.modeling.fit import MIN_VALUES

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
    return out


def _plan_command(args) -> int:
    from perfsweep.config import load_config_file

    sweep = load_config_file(args.config)
    print("\n".join(plan_lines(sweep, args.seconds_per_run)))
    return 0


def register_cli(sub) -> None:
    """``perfsweep plan CONFIG``: configurations, runs and estimated core-hours per study."""
    import argparse

    def positive(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0")
        return value

    p = sub.add_parser("plan", help="configurations, runs and estimated core-hours of each study's design")
    p.add_argument("config", nargs="?", default="config/config.yaml")
    p.add_argument("--seconds-per-run", type=positive, default=ASSUMED_SECONDS,
                   help=f"wall seconds per run and process assumed where a study has no records (default {ASSUMED_SECONDS:g})")
    p.set_defaults(func=_plan_command)
