"""The judging of ``perfsweep compare BASE... NEW``: the sides matched by study, region (call path), metric
and parameter, one :class:`Row` per pair with its statistics (:mod:`perfsweep.compare.statistics`), and
the verdicts, as a performance-regression gate.

    from perfsweep.compare.load import load_side
    from perfsweep.compare.judge import compare
    result = compare(load_side("before/results"), load_side("after/results"), threshold=0.05)
    result.rows          # one Row per study, region (call path) and metric both sides have
    result.one_sided     # what only one side has: listed, never dropped silently
    result.exit_code()   # 0 no gated regression, 1 a gated regression or a confident scaling-class worsening

- **no common shift**: every row is judged on its own ratio B/A. A change of every region alike (a
  whole program 20 % slower, another compiler) is a change; an earlier version divided the rows by
  their median ratio, which let a whole-program slowdown pass and made an unchanged region a
  "regression" where the others got faster.
- **history** (several baselines, ``history``): the earlier baseline sweeps of the same config give each
  row the spread of whole sweeps that one sweep's resamples cannot see. With k baselines (A the latest)
  the ratio is B over the geometric mean of the baselines' predictions; its log's variance is B's
  resampled variance, plus the baselines' mean resampled variance over k, plus the between-sweep
  variance (the variance of the k baselines' log predictions beyond their resampled variance, method
  of moments) times 1 + 1/k: a prediction interval of a new sweep. It is judged as Student's t with
  Satterthwaite's degrees of freedom, never fewer than k - 1 (k - 1 where the between-sweep spread is
  the whole variance, more where the sweeps' own resamples, known from many resamples, dominate).
  With one baseline the between-sweep variance is unknown, and the summary says so.
- **paired** (``load.load_paired``: two variants of one sweep, config key ``variants:``): the variants ran
  back to back in every round, so the host's drift falls on both alike; each row's ratio and interval
  are those of its pairs of runs (perfsweep.compare.paired), and the summary says so.
- **verdict**: the two one-sided tests of "the change is beyond the threshold" (above 1 + threshold for
  a regression, below 1 / (1 + threshold) for an improvement; directions swapped where more is better,
  :func:`direction`) give a p-value; every gating test (the rows whose share of the total at the target
  is >= ``min_share``: their ratio tests and their scaling-class tests) is corrected together by Holm's
  step-down method, which bounds the chance of *any* false alarm among them (the family-wise error
  rate) at ``alpha``: a CI gate fails a build on one row, so that is the error that matters. A row
  whose corrected p-value is below ``alpha`` is a ``regression`` or an ``improvement``; one whose
  interval lies within the threshold band is ``no significant change`` (equivalence: the two one-sided
  tests at the interval's level); else ``inconclusive``. A scaling class ``worse``, ``better`` or
  ``changed`` whose corrected p-value is not below ``alpha`` becomes ``class uncertain``. Rows below
  ``min_share`` get the same verdict computed without correction, marked as not gating.
- **power**: every row reports its minimum detectable effect (``mde``, statistics.detectable: at
  ``alpha`` and 80 % power, from its standard error); a gating row whose effect is above the threshold
  cannot resolve it, and ``needed`` says about how many times the repetitions (the effect shrinks like
  1/sqrt(k)) would.

The exit code (``CompareResult.exit_code``): 1 where a gating row is a regression or its class is
``worse``, or (``fail_on_inconclusive``) a gating row is inconclusive; else 0. Bad input raises
UserError (exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import numpy as np
import pandas as pd

from perfsweep.compare import statistics
from perfsweep.compare.load import EXTRAP_STUDY, Entry, Side, is_results
from perfsweep.compare.paired import paired_ratio
from perfsweep.errors import CompareError

THRESHOLD = 0.05
ALPHA = 0.05
LEVEL = 0.9
MIN_SHARE = 0.05  # rows below 5 % of the total time at the target do not gate (shown all the same)
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
    p_scaling: float = 1.0  # of the scaling class's change (statistics.scaling_test), before the correction
    p_scaling_adjusted: float = 1.0  # after Holm's correction with every gating test
    df: float = math.inf  # degrees of freedom of the ratio's test (finite: several baselines)
    baselines: int = 1  # how many baseline sweeps the ratio is judged against
    drift: float = math.nan  # the between-sweep standard deviation of the log prediction (several baselines)
    mde: float = math.nan  # minimum detectable effect (relative change) at alpha and 80 % power
    needed: float = math.nan  # about how many times the repetitions would resolve the threshold (>1: more)
    notes: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # per parameter of B (target's order) A's column
    names_a: list[str] = field(default_factory=list)  # A's parameter names
    entry_a: Entry | None = field(default=None, repr=False)
    entry_b: Entry | None = field(default=None, repr=False)
    extra: dict[str, Any] = field(default_factory=dict)  # the columns of statistics that are no field above

    def gates(self) -> bool:
        """Whether the row fails the gate: a gating regression or confident scaling-class worsening."""
        return self.gated and (self.verdict == "regression" or self.scaling == "worse")

    def resolves(self, threshold: float) -> bool:
        """Whether the row could detect a change of the threshold's size (its mde at most the threshold)."""
        return math.isfinite(self.mde) and self.mde <= threshold

    def record(self) -> dict[str, Any]:
        return {"study": self.study, "region": self.region, "metric": self.metric, "verdict": self.verdict,
                "gated": self.gated, "direction": direction(self), "ratio": self.ratio, "low": self.low,
                "high": self.high, "se": self.se, "df": self.df if math.isfinite(self.df) else None,
                "baselines": self.baselines, "drift": self.drift, "mde": self.mde, "needed": self.needed,
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "share": self.share, "impact": self.impact,
                "scaling": self.scaling, "p_scaling": self.p_scaling, "p_scaling_adjusted": self.p_scaling_adjusted, "orders_a": self.orders_a, "orders_b": self.orders_b,
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
    baselines: list[str] = field(default_factory=list)  # every baseline's path, A (the latest) last
    fail_on_inconclusive: bool = False
    differences: list[str] = field(default_factory=list)  # how A's and B's runs differ (compare.setting)
    paired: bool = False  # A and B are variants of one sweep, measured together (load.load_paired)

    def exit_code(self) -> int:
        if any(r.gates() for r in self.rows):
            return 1
        return 1 if self.fail_on_inconclusive and any(r.gated and r.verdict == "inconclusive" for r in self.rows) else 0

    def unresolved(self) -> list[Row]:
        """The gating rows whose minimum detectable effect is above the threshold (or unknown)."""
        return [r for r in self.rows if r.gated and not r.resolves(self.threshold)]

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
            level: float = LEVEL, history: Sequence[Side] = (), fail_on_inconclusive: bool = False) -> CompareResult:
    """Match the two sides' studies, call paths, metrics and parameters by name and compare each pair;
    ``history``: earlier baseline sweeps of the same config (``a`` is the latest), judged together."""
    param_map = dict(param_map or {})
    at = dict(at or {})
    paired = a.variant is not None and b.variant is not None
    if paired and history:
        raise CompareError(f"{a.path}: a paired measurement's variants are judged by themselves, without earlier baselines")
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
    for study in [s for s in studies_a if s in studies_b]:
        for h in history:
            if study in h.params and h.params[study] != a.params[study]:
                raise CompareError(f"{h.files[study]}: study {study}: parameters {', '.join(h.params[study])} differ "
                                   f"from the latest baseline's ({a.files[study]}: {', '.join(a.params[study])}): "
                                   "baselines must be sweeps of the same config")
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
        study_rows = [_row(study, key, ea[key], eb[key], names_b, order, target, totals, threshold, level, paired)
                      for key in keys]
        for row in study_rows:
            _history(row, [h.studies.get(study, {}).get((row.region, row.metric)) for h in history], level)
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
    return CompareResult(a.path, b.path, rows, one_sided, threshold, alpha, level, min_share, param_map,
                         [h.path for h in history] + [a.path], fail_on_inconclusive, paired=paired)


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
         target: np.ndarray, totals: tuple[dict, dict], threshold: float, level: float, paired: bool = False) -> Row:
    """The row of one region and metric: its statistics (statistics.STATISTICS) of the pair at the target;
    ``paired``: the two variants of one sweep, judged by their pairs of runs."""
    region, metric = key
    xa = target[np.argsort(order)]  # the target in A's parameter order
    ra, rb = statistics.resampled(ea.model, xa), statistics.resampled(eb.model, target)
    pair = statistics.Pair(study, region, metric, ea, eb, list(names), list(order), target,
                           statistics.predict_at(ea.model, xa), statistics.predict_at(eb.model, target), ra, rb,
                           totals[0].get(metric, math.nan), totals[1].get(metric, math.nan), level, threshold, paired,
                           paired_ratio(ea, eb, list(order), target) if paired else None)
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
                   "extra", "p_scaling_adjusted", "baselines", "drift", "mde", "needed", "direction",
                   "lead_share_a", "lead_share_b"}


def direction(row: Row) -> str:
    """``lower`` (less is better: a time) or ``higher`` (more is better: a rate): the metric's declared
    direction (config, models.json; perfsweep.apps.metric_kinds), else the guess from its name."""
    return "higher" if row.entry_b.kind_of(row.metric).higher_is_better else "lower"


def _history(row: Row, earlier: list[Entry | None], level: float) -> None:
    """The row's ratio, interval and standard error against every baseline (module docstring, history):
    ``earlier`` are the older baselines' entries of the row (None: that sweep has not got it)."""
    found = [e for e in earlier if e is not None]
    if row.entry_a is None or row.entry_b is None or not found:
        return
    xa = np.array([row.target[n] for n in row.target])[np.argsort(row.order)]  # A's parameter order
    logs, variances = [], []
    for entry in [*found, row.entry_a]:
        value, boots = statistics.predict_at(entry.model, xa), statistics.resampled(entry.model, xa)
        if not (value > 0 and len(boots) > 1 and np.all(boots > 0)):
            row.notes.append("a baseline's prediction or resamples not positive at the target: judged against A only")
            return
        logs.append(math.log(value))
        variances.append(float(np.var(np.log(boots), ddof=1)))
    boots_b = statistics.resampled(row.entry_b.model, np.array(list(row.target.values())))
    if not (row.predicted_b > 0 and len(boots_b) > 1 and np.all(boots_b > 0)):
        return
    k = len(logs)
    spread, within = float(np.var(logs, ddof=1)), float(np.mean(variances))
    between = max(0.0, spread - within)
    part = (1 + 1 / k) * between
    var = float(np.var(np.log(boots_b), ddof=1)) + within / k + part
    se = math.sqrt(var)
    # Satterthwaite: the baselines' spread is known from k - 1 degrees of freedom, the resamples' from many
    df = max(k - 1.0, var ** 2 * (k - 1) / ((1 + 1 / k) * spread) ** 2) if spread > 0 else math.inf
    log_r = math.log(row.predicted_b) - float(np.mean(logs))
    z = statistics.quantile(0.5 + level / 2, df)
    row.ratio, row.low, row.high = math.exp(log_r), math.exp(log_r - z * se), math.exp(log_r + z * se)
    row.se, row.df, row.baselines, row.drift = se, df, k, math.sqrt(between)
    if len(found) < len(earlier):
        row.notes.append(f"in {k} of the {len(earlier) + 1} baselines")


def _decide(rows: list[Row], threshold: float, alpha: float) -> None:
    """Per row the p-value of "beyond the threshold" and the minimum detectable effect; Holm over every
    gating test (ratios and scaling classes); the verdicts."""
    band = math.log1p(threshold)
    for r in rows:
        log_r = math.log(r.ratio) if r.ratio > 0 else math.nan
        r.p_value = r.p_adjusted = statistics.threshold_p_value(log_r, r.se, band, r.df)
        r.p_scaling_adjusted = r.p_scaling
        r.mde = statistics.detectable(r.se, alpha, r.df)
        r.needed = (math.log1p(r.mde) / band) ** 2 if math.isfinite(r.mde) and band > 0 else math.nan
    gated = [r for r in rows if r.gated]
    adjusted = statistics.holm([r.p_value for r in gated] + [r.p_scaling for r in gated])
    for r, p, q in zip(gated, adjusted[:len(gated)], adjusted[len(gated):]):
        r.p_adjusted, r.p_scaling_adjusted = p, q
    for r in rows:
        more_is_better = direction(r) == "higher"
        if not (math.isfinite(r.p_adjusted) and math.isfinite(r.ratio) and r.ratio > 0):
            r.verdict = "inconclusive"
        elif r.p_adjusted < alpha and abs(math.log(r.ratio)) > band:
            up = r.ratio > 1
            r.verdict = "regression" if up != more_is_better else "improvement"
        elif math.isfinite(r.low) and 1 / (1 + threshold) <= r.low and r.high <= 1 + threshold:
            r.verdict = "no significant change"
        elif not math.isfinite(r.low) and r.se == 0 and abs(math.log(r.ratio)) <= band:  # no spread: exact models
            r.verdict = "no significant change"
        else:
            r.verdict = "inconclusive"
        if r.scaling in ("worse", "better", "changed") and not r.p_scaling_adjusted < alpha:
            r.notes.append(f"scaling class {r.scaling} before Holm's correction (p {r.p_scaling:.3g}, corrected "
                           f"{r.p_scaling_adjusted:.3g}): class uncertain")
            r.scaling = "class uncertain"
        if r.scaling == "worse":
            r.notes.insert(0, "scaling class worse: " + r.orders_a + " -> " + r.orders_b)
        if not r.gated and math.isfinite(r.share):
            r.notes.append(f"not gating: {r.share:.1%} of the total at the target (--min-share)")
