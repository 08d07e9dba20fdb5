"""Experiment designs: which configurations of a study's grid are measured.

Usage::

    study.design                      # Design(kind="sparse", base={}, extra=2, ...), from the config
    study.configurations()            # the design's configurations (ids as in the full grid)
    perfsweep.sweep.plan.add_planned_points(sweep)   # + the points earlier adaptive rounds added
    perfsweep.steps.adapt.next_round(sweep, "results")  # after a round of runs: adaptive studies add points

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
  kept in the study's plan state (perfsweep.sweep.plan, points.json), which the workflow reads while it plans.

A design's configurations keep their ids from the full grid, so switching between designs, or adding
points, reruns nothing that was measured.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfsweep.errors import ConfigError
from perfsweep.values import Configuration, format_value

KINDS = ("full", "sparse", "adaptive")
CENTRE = ("centre", "center")  # base: every parameter at its middle value
LARGEST = "largest"  # base: every parameter at its largest value
MAX_CANDIDATES = 200_000  # grid points an extra point or an adaptive round chooses from


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
        through = f" through {{{', '.join(f'{k} = {format_value(v)}' for k, v in self.base.items())}}}" if self.base else ""
        out = f"{self.kind} (lines{through} + {self.extra} extra"
        if self.kind == "adaptive":
            out += f", +{self.per_round} per round, <= {self.rounds} rounds"
            out += f", budget {self.budget:g} core-h" if self.budget is not None else ""
        return out + ")"


def parse_design(value: Any, source: str, where: str, vary: dict[str, list[Any]]) -> Design:
    """A Design from the config's ``design:`` (a kind, or a mapping with ``kind:``); ConfigError if wrong."""
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


@dataclass(frozen=True)
class Decide:
    """Measure until decided (config key ``decide:``, perfsweep.steps.decide): after the planned rounds a
    study whose time model's lead share is under ``lead_share`` or whose 90 % interval at its validation
    points is wider than ``precision`` (of the prediction) gets more runs, within ``budget``: a share of
    the study's planned core-hours (its design's configurations at their planned repetitions)."""

    budget: float  # share of the planned core-hours the study may spend more
    lead_share: float = 0.8
    precision: float | None = None  # the interval's width (high - low) over the prediction, at most

    def text(self) -> str:
        width = f" and a 90 % interval at most {100 * self.precision:g} % wide" if self.precision is not None else ""
        return f"lead share >= {100 * self.lead_share:g} %{width}"


def parse_decide(value: Any, source: str, where: str, bundle: str = "none") -> Decide | None:
    """A Decide from the config's ``decide:`` (None: off); ConfigError naming the field if wrong."""
    if value is None or value is False:
        return None
    if bundle == "repetitions":
        raise ConfigError(source, where, "measuring until decided with bundle: repetitions would rerun whole "
                                         "bundles each round; give bundle: none")
    for key in ("budget", "lead_share", "precision"):
        v = value.get(key)
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0):
            raise ConfigError(source, f"{where}.{key}", f"{v!r} is not a positive number")
    if "budget" not in value:
        raise ConfigError(source, where, "no budget: give budget, the share of the planned core-hours it may "
                                         "spend more (e.g. 0.5)")
    if value.get("lead_share", 0.8) > 1:
        raise ConfigError(source, f"{where}.lead_share", f"{value['lead_share']!r} is not a share (0 < share <= 1)")
    return Decide(budget=float(value["budget"]), lead_share=float(value.get("lead_share", 0.8)),
                  precision=None if value.get("precision") is None else float(value["precision"]))


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
# and design state (its added points), the most recent CACHED of them kept
CACHED = 256


class _Keyed:
    """A study as the cache's key: what its configurations depend on (compared as text), the study beside it."""

    __slots__ = ("key", "study")

    def __init__(self, study) -> None:
        self.key = repr((study.name, study.vary, sorted(study.fixed.items()), study.design, study.added))
        self.study = study

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Keyed) and self.key == other.key


def design_configurations(study) -> list:
    """The configurations of ``study`` (a perfsweep.config.Study) under its design, in grid order,
    with the points adaptive rounds added (``study.added``: config ids)."""
    return _configurations(_Keyed(study))


@functools.lru_cache(maxsize=CACHED)
def _configurations(keyed: _Keyed) -> list:
    study = keyed.study
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
    return out


def config_id(vary: dict[str, list[Any]], index: tuple[int, ...]) -> str:
    return "_".join(f"{n}={format_value(vals[j])}" for (n, vals), j in zip(vary.items(), index))


def grid_ids(vary: dict[str, list[Any]]) -> dict[str, tuple[int, ...]]:
    """config id -> grid index of every point of the grid."""
    return {config_id(vary, tuple(i)): tuple(int(j) for j in i) for i in _grid_index(vary)}
