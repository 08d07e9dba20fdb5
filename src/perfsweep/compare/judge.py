"""The judging of ``perfsweep compare A B``: the two sides matched by study, region (call path), metric and
parameter, one :class:`Row` per pair with its statistics (:mod:`perfsweep.compare.statistics`), and
the verdicts, as a performance-regression gate.

    from perfsweep.compare.load import load_side
    from perfsweep.compare.judge import compare
    result = compare(load_side("before/results"), load_side("after/results"), threshold=0.05)
    result.rows          # one Row per study, region (call path) and metric both sides have
    result.one_sided     # what only one side has: listed, never dropped silently
    result.exit_code()   # 0 no gated regression, 1 a gated regression or a confident scaling-class worsening

Per study, after the rows' statistics (the ratio B/A at the target and its interval, share and impact,
the scaling class):

- **common shift**: a study with at least ``SHIFT_ROWS`` leaf rows (regions containing no other
  row's region: not ``all``, not ``step`` beside ``step/forces``), most of whose gating ones have the
  median of the leaves' ratios within their intervals (they moved together), is judged against that
  median (``--absolute``: never). With all rows instead of the leaves a force region slowed by 20 %
  (57 % of the time) moved all, step and compute with it and passed for a shift of 1.30. On a shared host two sweeps of the same code move as a whole with the
  load: of seven tiny ljmd sweeps run one after another here, two took 156 s and 87 s instead of 61 s,
  every region 1.5-1.9x slower, and 5 of their 21 pairs were "regressions" by the raw ratios (1 with
  the shift). Where only some regions changed, the gating rows do not agree on the median (the
  regions that contain the change moved, those that do not stayed) and the raw ratios are judged: a
  shift taken from the small regions then (ljmd --all-pairs slowed them by 1.4x through the caches)
  called the unchanged force region an improvement of 0.65. A change of every
  region alike (the host, or a compiler that slows everything) is reported on its own line and does
  not gate. A row's ``relative`` ratio is its ratio over the shift, with the interval divided alike
  (the median's own uncertainty is not added).
- **verdict**: the two one-sided tests of "the change is beyond the threshold" (the relative ratio
  above 1 + threshold for a regression, below 1 / (1 + threshold) for an improvement; directions swapped for
  a rate, where more is better) give a p-value; the rows that gate (share of the total at the target
  >= ``min_share``) are corrected together by Holm's step-down method, which bounds the chance of
  *any* false regression among them (the family-wise error rate) at ``alpha``: a CI gate fails a
  build on one row, so that is the error that matters; Benjamini-Hochberg would bound only the share
  of false ones among the flagged rows and let a run of many call paths fail on noise more often.
  A row whose corrected p-value is below ``alpha`` is a ``regression`` or an ``improvement``; one
  whose interval lies within the threshold band is ``no significant change``; else ``inconclusive``.
  Rows below ``min_share`` get the same verdict computed without correction, marked as not gating.

The exit code (``CompareResult.exit_code``): 1 where a gating row is a regression or its class is
``worse`` (a confident scaling-class worsening), else 0. Bad input raises UserError (exit 2).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.compare import statistics
from perfsweep.compare.load import EXTRAP_STUDY, Entry, Side, is_results
from perfsweep.errors import CompareError

THRESHOLD = 0.05
ALPHA = 0.05
LEVEL = 0.9
MIN_SHARE = 0.05  # rows below 5 % of the total time at the target do not gate (shown all the same)
SHIFT_ROWS = 5  # a study with at least this many rows is judged against its common shift (below)
TOTAL = "time"  # the metric whose total (region all, else the sum over regions) times are shares of
VERDICTS = ("regression", "improvement", "no significant change", "inconclusive")


@dataclass
class Row:
    study: str
    region: str
    metric: str
    model_a: str
    model_b: str
    orders_a: str
    orders_b: str
    share_a: float  # lead shares (resamples agreeing with the side's own lead order)
    share_b: float
    scaling: str  # same, worse, better, changed, class uncertain
    target: dict[str, float]
    predicted_a: float
    predicted_b: float
    ratio: float
    low: float
    high: float
    p_value: float  # two-sided, of "beyond the threshold", before the correction
    p_adjusted: float  # after Holm's correction among the gating rows (= p_value for the others)
    share: float  # of the total of its metric at the target
    impact: float  # (B - A) / A's total at the target
    gated: bool
    verdict: str = ""
    se: float = math.nan  # of log B/A
    shift: float = 1.0  # the study's common shift (B/A of its typical row) the verdict is judged against
    relative: float = math.nan  # ratio / shift, and its interval: what the verdict judges
    rel_low: float = math.nan
    rel_high: float = math.nan
    notes: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # per parameter of B (target's order) A's column
    names_a: list[str] = field(default_factory=list)  # A's parameter names
    entry_a: Entry | None = field(default=None, repr=False)
    entry_b: Entry | None = field(default=None, repr=False)
    extra: dict[str, Any] = field(default_factory=dict)  # the columns of statistics that are no field above

    def gates(self) -> bool:
        """Whether the row fails the gate: a gating regression or confident scaling-class worsening."""
        return self.gated and (self.verdict == "regression" or self.scaling == "worse")

    def record(self) -> dict[str, Any]:
        return {"study": self.study, "region": self.region, "metric": self.metric, "verdict": self.verdict,
                "gated": self.gated, "ratio": self.ratio, "low": self.low, "high": self.high, "shift": self.shift,
                "relative": self.relative, "relative_low": self.rel_low, "relative_high": self.rel_high,
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "share": self.share, "impact": self.impact,
                "scaling": self.scaling, "orders_a": self.orders_a, "orders_b": self.orders_b,
                "lead_share_a": self.share_a, "lead_share_b": self.share_b,
                "target": ", ".join(f"{k}={v:g}" for k, v in self.target.items()),
                "predicted_a": self.predicted_a, "predicted_b": self.predicted_b,
                "model_a": self.model_a, "model_b": self.model_b, "notes": "; ".join(self.notes), **self.extra}


@dataclass
class CompareResult:
    a: str
    b: str
    rows: list[Row]
    one_sided: list[tuple[str, str, str]]  # (side A or B, what, name)
    threshold: float
    alpha: float
    level: float
    min_share: float
    param_map: dict[str, str]
    shifts: dict[str, float] = field(default_factory=dict)  # per study the common shift (1: none applied)
    absolute: bool = False

    def exit_code(self) -> int:
        return 1 if any(r.gates() for r in self.rows) else 0

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([r.record() for r in self.rows])

    def counts(self) -> dict[str, int]:
        gated = [r for r in self.rows if r.gated]
        out = {v: sum(r.verdict == v for r in gated) for v in VERDICTS}
        out["scaling worse"] = sum(r.scaling == "worse" for r in gated)
        out["not gated"] = len(self.rows) - len(gated)
        return out


def compare(a: Side, b: Side, threshold: float = THRESHOLD, at: dict[str, float] | None = None,
            param_map: dict[str, str] | None = None, min_share: float = MIN_SHARE, alpha: float = ALPHA,
            level: float = LEVEL, absolute: bool = False) -> CompareResult:
    """Match the two sides' studies, call paths, metrics and parameters by name and compare each pair."""
    param_map = dict(param_map or {})
    at = dict(at or {})
    one_sided: list[tuple[str, str, str]] = []
    studies_a, studies_b = dict(a.studies), dict(b.studies)
    if len(studies_a) == 1 and len(studies_b) == 1 and set(studies_a) != set(studies_b) and \
            (EXTRAP_STUDY in studies_a or EXTRAP_STUDY in studies_b or not is_results(a) or not is_results(b)):
        # two single inputs (files): their one study each is the same experiment
        (name_a, ent_a), = studies_a.items()
        name_b = next(iter(studies_b))
        studies_a = {name_b: ent_a}
        a = Side(a.path, studies_a, {name_b: a.params[name_a]}, {name_b: a.files[name_a]})
    for name in sorted(set(studies_a) - set(studies_b)):
        one_sided.append(("A", "study", name))
    for name in sorted(set(studies_b) - set(studies_a)):
        one_sided.append(("B", "study", name))
    unknown = set(param_map) - {p for ps in a.params.values() for p in ps}
    if unknown:
        raise CompareError(f"--param-map: {', '.join(sorted(unknown))} is not a parameter of {a.path} "
                           f"(it has {', '.join(sorted({p for ps in a.params.values() for p in ps}))})")
    unknown_at = set(at) - {p for ps in b.params.values() for p in ps}
    if unknown_at:
        raise CompareError(f"--at: {', '.join(sorted(unknown_at))} is not a parameter of {b.path} "
                           f"(it has {', '.join(sorted({p for ps in b.params.values() for p in ps}))})")
    rows: list[Row] = []
    shifts: dict[str, float] = {}
    for study in [s for s in studies_a if s in studies_b]:
        names_a = [param_map.get(p, p) for p in a.params[study]]
        names_b = b.params[study]
        if set(names_a) != set(names_b):
            raise CompareError(f"{b.files[study]}: study {study}: parameters {', '.join(names_b)} do not match "
                               f"{a.files[study]}'s {', '.join(names_a)} (give --param-map A_NAME=B_NAME for each "
                               "renamed parameter)")
        order = [names_a.index(n) for n in names_b]  # A's columns in B's order
        ea, eb = studies_a[study], studies_b[study]
        for key in [k for k in ea if k not in eb]:
            one_sided.append(("A", f"{study}: region/metric", "/".join(key)))
        for key in [k for k in eb if k not in ea]:
            one_sided.append(("B", f"{study}: region/metric", "/".join(key)))
        keys = [k for k in eb if k in ea]
        if not keys:
            continue
        target = _target(ea, eb, names_b, order, at, study)
        totals = (_totals(ea, target, order), _totals(eb, target, None))
        study_rows = [_row(study, key, ea[key], eb[key], names_b, order, target, totals, threshold, level)
                      for key in keys]
        shifts[study] = _judge(study_rows, threshold, min_share, absolute)
        rows += study_rows
    if not rows:
        only = "; ".join(f"only in {side}: {what} {name}" for side, what, name in one_sided[:4])
        raise CompareError(f"{b.path}: nothing in common with {a.path} to compare (no study, region and metric of "
                           f"the same names{': ' + only if only else ''}{' ...' if len(one_sided) > 4 else ''})")
    for row in rows:
        # a rate (no share of a total) of the whole run gates by itself
        row.gated = bool(row.share >= min_share) or (math.isnan(row.share) and row.region == "all")
    _decide(rows, threshold, alpha)
    rows.sort(key=lambda r: (not r.gated, -abs(r.impact) if math.isfinite(r.impact) else 0.0))
    return CompareResult(a.path, b.path, rows, one_sided, threshold, alpha, level, min_share, param_map, shifts,
                         absolute)


def _target(ea: dict, eb: dict, names: list[str], order: list[int], at: dict[str, float], study: str) -> np.ndarray:
    """The point to compare at, in B's parameter order: ``at`` where given, else the largest configuration
    both sides measured (the largest product of its values), else per parameter the largest value both
    ranges reach."""
    if all(n in at for n in names):
        return np.array([at[n] for n in names], dtype=float)
    pa = [e.points[:, order] for e in ea.values() if e.points.size]
    pb = [e.points for e in eb.values() if e.points.size]
    if not pa or not pb:
        file = next(iter((eb if not pb else ea).values())).source
        raise CompareError(f"{file}: study {study}: its models carry no measured points, so no default target: "
                           f"give --at {','.join(f'{n}=...' for n in names)}")
    pa, pb = np.unique(np.vstack(pa), axis=0), np.unique(np.vstack(pb), axis=0)
    common = np.array([p for p in pb if np.any(np.all(np.isclose(pa, p), axis=1))])
    if len(common):
        default = common[np.argmax(np.sum(np.log(np.maximum(common, 1e-300)), axis=1))]
    else:
        default = np.minimum(pa.max(axis=0), pb.max(axis=0))
    return np.array([at.get(n, default[k]) for k, n in enumerate(names)], dtype=float)


def _totals(entries: dict, target: np.ndarray, order: list[int] | None) -> dict[str, float]:
    """Per metric the total at the target: the region ``all`` where there is one, else the sum over
    regions; a time's (a region's time, a rank's phase) is the total time (``TOTAL``)."""
    x = target if order is None else target[np.argsort(order)]
    out: dict[str, float] = {}
    for (region, metric), e in entries.items():
        if region == "all":
            out[metric] = abs(statistics.predict_at(e.model, x))
    with_all = set(out)
    for (region, metric), e in entries.items():
        if metric not in with_all:
            out[metric] = out.get(metric, 0.0) + abs(statistics.predict_at(e.model, x))
    kinds = {metric: e.kind_of(metric) for (_, metric), e in entries.items()}
    if TOTAL in out:
        out.update({metric: out[TOTAL] for metric in out if kinds[metric].is_time})
    for metric in [m for m in out if kinds[m].higher_is_better]:  # a rate has no total (no share, no impact)
        out[metric] = math.nan
    return out


def _row(study: str, key: tuple[str, str], ea: Entry, eb: Entry, names: list[str], order: list[int],
         target: np.ndarray, totals: tuple[dict, dict], threshold: float, level: float) -> Row:
    """The row of one region and metric: its statistics (statistics.STATISTICS) of the pair at the target."""
    region, metric = key
    xa = target[np.argsort(order)]  # the target in A's parameter order
    pair = statistics.Pair(study, region, metric, ea, eb, list(names), list(order), target,
                           statistics.predict_at(ea.model, xa), statistics.predict_at(eb.model, target),
                           statistics.resampled(ea.model, xa), statistics.resampled(eb.model, target),
                           totals[0].get(metric, math.nan), totals[1].get(metric, math.nan), level, threshold)
    columns = statistics.measure(pair)
    notes = columns.pop("notes")
    taken = sorted(set(columns) & _NOT_STATISTICS)
    if taken:
        raise ValueError(f"statistics.STATISTICS: {', '.join(taken)} is a column of the row's own, no statistic's")
    kind = eb.kind_of(metric)
    if kind.higher_is_better:
        notes.append(f"a rate{' in ' + kind.unit if kind.unit else ''}: more is better; no share of a total")
    own = {f.name for f in fields(Row)} - _NOT_STATISTICS
    return Row(study, region, metric, model_a=str(ea.model), model_b=str(eb.model),
               target=dict(zip(names, map(float, target))), predicted_a=pair.predicted_a,
               predicted_b=pair.predicted_b, p_value=math.nan, p_adjusted=math.nan, gated=False, notes=notes,
               order=list(order), names_a=list(ea.model.param_names), entry_a=ea, entry_b=eb,
               extra={k: v for k, v in columns.items() if k not in own},
               **{k: v for k, v in columns.items() if k in own})


# Row's fields and Row.record's columns that are not the statistics' (_row and the judging fill them)
_NOT_STATISTICS = {"study", "region", "metric", "model_a", "model_b", "target", "predicted_a", "predicted_b",
                   "p_value", "p_adjusted", "gated", "verdict", "notes", "order", "names_a", "entry_a", "entry_b",
                   "extra", "shift", "relative", "rel_low", "rel_high", "relative_low", "relative_high",
                   "lead_share_a", "lead_share_b"}


def _judge(rows: list[Row], threshold: float, min_share: float, absolute: bool) -> float:
    """The study's common shift, and per row its ratio relative to it, the interval, and the p-value of
    "beyond the threshold". The shift is the median ratio of the leaf rows (_leaves), applied where the
    study has at least SHIFT_ROWS of them with a ratio and more than half of the gating ones (share >=
    ``min_share``; all if none) have it within their interval: they moved together. Else, or with
    ``absolute``, 1.0."""
    leaves = _leaves(rows)
    logs = [math.log(r.ratio) for r in leaves if math.isfinite(r.ratio) and r.ratio > 0]
    shift = 1.0
    if not absolute and len(logs) >= SHIFT_ROWS:
        median = math.exp(float(np.median(logs)))
        gating = [r for r in leaves if r.share >= min_share] or leaves
        if sum(r.low <= median <= r.high for r in gating) > len(gating) / 2:
            shift = median
    band = math.log1p(threshold)
    for r in rows:
        r.shift = shift
        r.relative, r.rel_low, r.rel_high = r.ratio / shift, r.low / shift, r.high / shift
        log_r = math.log(r.relative) if r.relative > 0 else math.nan
        r.p_value = statistics.threshold_p_value(log_r, r.se, band)
        r.p_adjusted = r.p_value
    if shift != 1.0:
        for r in rows:
            r.notes.append(f"judged against the study's common shift x{shift:.3f}")
    return shift


def _leaves(rows: list[Row]) -> list[Row]:
    """The rows of regions that contain no other row's region: not ``all`` (the whole run, and its
    phases), not ``step`` beside ``step/forces``, not ``main`` beside ``main->solve``. An aggregate moves
    with whatever it contains, so a change of a region that is most of the time would move most rows
    and pass for a common shift (a force region slowed 20 % moved all, step and compute with it)."""
    outer = set()  # every region's enclosing regions, by its name
    for region in {r.region for r in rows}:
        outer.update(region[:m.start()] for m in re.finditer("/|->", region))
    return [r for r in rows if r.region != "all" and r.region not in outer]


def _decide(rows: list[Row], threshold: float, alpha: float) -> None:
    gated = [r for r in rows if r.gated]
    for r, p in zip(gated, statistics.holm([r.p_value for r in gated])):
        r.p_adjusted = p
    band = math.log1p(threshold)
    for r in rows:
        more_is_better = r.entry_b.kind_of(r.metric).higher_is_better
        if not (math.isfinite(r.p_adjusted) and math.isfinite(r.relative) and r.relative > 0):
            r.verdict = "inconclusive"
        elif r.p_adjusted < alpha and abs(math.log(r.relative)) > band:
            up = r.relative > 1
            r.verdict = "regression" if up != more_is_better else "improvement"
        elif math.isfinite(r.rel_low) and 1 / (1 + threshold) <= r.rel_low and r.rel_high <= 1 + threshold:
            r.verdict = "no significant change"
        elif not math.isfinite(r.rel_low) and abs(math.log(r.relative)) <= band:  # no spread: exact models
            r.verdict = "no significant change"
        else:
            r.verdict = "inconclusive"
        if r.scaling == "worse":
            r.notes.insert(0, "scaling class worse: " + r.orders_a + " -> " + r.orders_b)
        if not r.gated and math.isfinite(r.share):
            r.notes.append(f"not gating: {r.share:.1%} of the total at the target (--min-share)")
