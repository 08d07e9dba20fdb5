"""``perfsweep compare A B``: two sweeps' models side by side, as a performance-regression gate.

    from perfsweep.modeling.sweep_compare import compare, load_side
    result = compare(load_side("before/results"), load_side("after/results"), threshold=0.05)
    result.rows          # one Row per study, region (call path) and metric both sides have
    result.one_sided     # what only one side has: listed, never dropped silently
    result.exit_code()   # 0 no gated regression, 1 a gated regression or a confident scaling-class worsening

A side is a results directory (``models/<study>/models.json``, with ``tables/<study>/aggregate.csv``
for the measured medians), a models.json (or a directory holding one, as ``perfsweep models --out``
writes), or an Extra-P input (text, JSON, JSON Lines or a CUBE directory), which is modelled here as
the pipeline models a study (``BOOTSTRAP`` resamples of the repetitions).

Per row:

- **lead orders** per parameter of A's and B's reported model (modeling.compare.lead_orders) and their
  *class*: ``same`` where they agree over the range both measured (compare.orders_agree); where they do
  not, ``worse`` (B grows faster in some parameter by more than compare.EXPONENT_TOLERANCE and slower in
  none; for a rate, falls faster), ``better``, or ``changed`` (faster in one, slower in another) only
  where the change is *confident*: both sides reproduce their own lead order in at least
  compare.STABLE of their resamples (lead_share), and in the parameter that changed (B's reported
  model growing faster, or slower, than A's by more than the tolerance) B's resampled models grow
  faster (slower) than A's in at least 95 % of the pairs of resamples (A's i, B's j), the growth
  measured over the range both sweeps measured (compare.growth). Otherwise ``class uncertain``: the
  resamples of the two sweeps overlap in form.
  (A first rule, fewer than compare.SUPPORT of either side's resamples reaching the other's lead
  order, left the n^2 pass of ljmd --all-pairs uncertain where 15 % of the noisy "before" sweep's
  resamples reached n^(3/2) log2(n)^2, and called two replicate sweeps' n^(2/3) log2(n)^2 and n^(3/2)
  a confident change at 5 %.)
- **ratio** B/A of the two models' predictions at the target (``--at``; default per study: the largest
  configuration both sweeps measured, else the largest values both ranges reach), with its ``level``
  interval from the resampled models both sweeps carry (the pipeline's resamples of the repetitions,
  each modelled anew, form chosen included, with the scatter between configurations that the
  repetitions do not show: modeling.consensus): log B/A is taken as normal with the variance of log
  A's plus log B's resampled predictions (the two sweeps are independent). Adding each model's
  ``scatter`` once more (the interval of two new measurements) counted it twice: on four pairs of
  tiny ljmd sweeps under a load of 6-12 on 2 cores it left a region slowed by 20 % inconclusive
  ([1.10, 1.80] where it is [1.21, 1.63] without), and the replicate pairs gave no false alarm
  either way. Using the stored resamples costs one evaluation per resample and keeps 1,000 call
  paths within seconds (bench/compare_scale.py); refitting both sweeps per resample would cost minutes.
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
- **share** of the row at the target: its larger prediction over the total time (region ``all``'s
  time where the side has it, else the sum of the regions' times; for a metric that is not a time, the
  total of that metric); **impact**: the change B - A over A's total, by which the table is sorted.

The exit code (``CompareResult.exit_code``): 1 where a gating row is a regression or its class is
``worse`` (a confident scaling-class worsening), else 0. Bad input raises UserError (exit 2).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from perfsweep import layout
from perfsweep.errors import CompareError
from perfsweep.modeling import compare as lead
from perfsweep.modeling.model import Model
from perfsweep.modeling.extrap_io import read_extrap
from perfsweep.modeling.extrap_models import fit_extrap
from perfsweep.modeling.fit import FitOptions
from perfsweep.modeling.predict import _check_model, entry_model, is_rate_metric, is_time_metric, load_entry
from perfsweep.modeling.terms import Term
from perfsweep.tables import to_markdown

BOOTSTRAP = 40  # resamples when an Extra-P input is modelled here (as pipeline.BOOTSTRAP)
THRESHOLD = 0.05
ALPHA = 0.05
LEVEL = 0.9
MIN_SHARE = 0.05  # rows below 5 % of the total time at the target do not gate (shown all the same)
SHIFT_ROWS = 5  # a study with at least this many rows is judged against its common shift (below)
TOTAL = "time"  # the metric whose total (region all, else the sum over regions) times are shares of
EXTRAP_STUDY = "input"  # the one study of an Extra-P input (so that two inputs' call paths match)
VERDICTS = ("regression", "improvement", "no significant change", "inconclusive")

MODELS_JSON = layout.file_name("models", "models_json")  # also in a folder of its own


def _layout(root: Path) -> dict[str, tuple[Path, Path]]:
    """Where a results directory keeps each study's models and aggregate table (perfsweep.layout):
    {study: (its models.json, its aggregate.csv)}."""
    return layout.study_models(root)


def _is_results_dir(root: Path) -> bool:
    return root.is_dir() and layout.models_dir(root).is_dir()


@dataclass
class Entry:
    model: Model
    points: np.ndarray  # measured configurations (N x parameters) ...
    medians: np.ndarray  # ... and their medians (or the model's means where no aggregate is at hand)
    source: str  # the file it came from


@dataclass
class Side:
    path: str
    studies: dict[str, dict[tuple[str, str], Entry]]
    params: dict[str, list[str]]  # per study its varied parameters
    files: dict[str, str]  # per study the file it was read from


def load_side(path: str | os.PathLike[str]) -> Side:
    """A results directory, a models.json (or a directory holding one) or an Extra-P input."""
    root = Path(path)
    if not root.exists():
        raise CompareError(f"{root}: no such file or directory")
    if _is_results_dir(root):
        found = _layout(root)
        if not found:
            raise CompareError(f"{root}: a results directory without models (no {layout.pattern('models', 'models_json')}): "
                               "run the sweep (perfsweep run) until its models stage has written them")
        side = Side(str(root), {}, {}, {})
        for study, (file, aggregate) in found.items():
            _add_models(side, file, study, aggregate)
        return side
    if root.is_dir() and (root / MODELS_JSON).is_file():
        root = root / MODELS_JSON
    if root.is_file() and root.suffix == ".json" and _is_models_json(root):
        side = Side(str(path), {}, {}, {})
        _add_models(side, root, None, None)
        return side
    return _extrap_side(root)


def _is_models_json(path: Path) -> bool:
    try:
        head = path.read_bytes()[:4096].lstrip()
    except OSError:
        return False
    return head.startswith(b"[") and (b'"model"' in head or head.rstrip() in (b"[", b"[]"))


def _add_models(side: Side, file: Path, study: str | None, aggregate: Path | None) -> None:
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        load_entry(file)  # its one-line error
        raise
    except (OSError, ValueError) as exc:
        raise CompareError(f"{file}: not a valid models.json ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CompareError(f"{file}: not a valid models.json (not a list of model entries)")
    if not entries:
        raise CompareError(f"{file}: no models (the study's models.csv beside it says why)")
    medians = _medians(aggregate) if aggregate is not None and aggregate.is_file() else None
    terms: dict = {}  # one Term object per distinct term of the file (resamples share them)
    for k, e in enumerate(entries):
        region, metric = e.get("region"), e.get("metric")
        if not isinstance(region, str) or not isinstance(metric, str):
            raise CompareError(f"{file}: entry {k}: region {region!r} / metric {metric!r} are not names")
        try:  # every check of perfsweep predict; damage in its words (load_entry reads the file again)
            model = _entry_model(e, file, terms)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, ArithmeticError) as exc:
            load_entry(file, region, metric)
            raise CompareError(f"{file}: region {region!r}, metric {metric!r}: not a valid model "
                               f"({type(exc).__name__} {str(exc)[:120]})") from None
        name = study or str(e.get("study") or file.parent.name)
        names = side.params.setdefault(name, list(model.param_names))
        if names != list(model.param_names):
            raise CompareError(f"{file}: {region}/{metric}: parameters {', '.join(model.param_names)} differ "
                               f"from the study's other models ({', '.join(names)})")
        side.files[name] = str(file)
        points, values = np.asarray(model.points, float), np.asarray(model.values, float)
        if medians is not None and (region, metric) in medians:
            table = medians[region, metric]
            if all(p in table for p in names):
                points, values = table[names].to_numpy(float), table["median"].to_numpy(float)
        if not values.size:
            points = np.empty((0, len(names)))
        side.studies.setdefault(name, {})[(region, metric)] = Entry(model, points.reshape(len(values), len(names)),
                                                                    values, str(file))


def _entry_model(e: dict, file: Path, terms: dict) -> Model:
    """predict.entry_model with the resampled models' terms read once per distinct term: Fraction
    parsing was 70 % of the time of loading 1,000 call paths of 41 models each."""
    boots = e["model"].get("bootstrap") or []
    model = entry_model({**e, "model": {**e["model"], "bootstrap": []}}, file)

    def term(data: list) -> Term:
        key = tuple(tuple(f) for f in data)
        if key not in terms:
            terms[key] = Term.from_list(data)
        return terms[key]

    model.bootstrap = [Model(model.param_names, [term(t) for t in b["terms"]], np.asarray(b["coefficients"], dtype=float),
                             reciprocal=model.reciprocal) for b in boots]
    _check_model(model, f"{file}: region {e['region']!r}, metric {e['metric']!r}: model")
    return model


def _medians(aggregate: Path) -> dict[tuple[str, str], pd.DataFrame] | None:
    """The aggregate's design points (validation points too: they are measurements) per (region, metric)."""
    try:
        agg = pd.read_csv(aggregate)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CompareError(f"{aggregate}: not a readable aggregate table ({str(exc).splitlines()[0][:160]})") from None
    if not {"region", "metric", "median"} <= set(agg.columns):
        raise CompareError(f"{aggregate}: not an aggregate table (needs columns region, metric, median)")
    if "oversubscribed" in agg:
        agg = agg[~agg["oversubscribed"].astype(str).str.lower().isin(("true", "1"))]
    return {key: g for key, g in agg.groupby(["region", "metric"], sort=False)}


def _extrap_side(path: Path) -> Side:
    if path.is_dir() and not any(path.iterdir()):
        raise CompareError(f"{path}: an empty directory: no models (give a results directory, a models.json "
                           "or an Extra-P input)")
    if path.is_dir() and not any(path.glob("*/*.cubex")) and not any(path.glob("*.cubex")):
        raise CompareError(f"{path}: no models: neither a results directory ({layout.pattern('models', 'models_json')}), "
                           "a directory with a models.json, nor a directory of CUBE profiles")
    read_extrap(path)  # its format errors, one line each, before the modelling
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, entries = fit_extrap(path, FitOptions(bootstrap=BOOTSTRAP))
    if not entries:
        why = "; ".join(sorted(set(table["reason"].astype(str)))) if len(table) else "no call paths"
        raise CompareError(f"{path}: no models ({why})")
    side = Side(str(path), {EXTRAP_STUDY: {}}, {}, {EXTRAP_STUDY: str(path)})
    for e in entries:
        model = Model.from_dict(e["model"])
        side.params[EXTRAP_STUDY] = list(model.param_names)
        side.studies[EXTRAP_STUDY][(e["region"], e["metric"])] = Entry(model, np.asarray(model.points, float),
                                                                       np.asarray(model.values, float), str(path))
    return side


# ---------------------------------------------------------------------------------------------------------------


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
                "model_a": self.model_a, "model_b": self.model_b, "notes": "; ".join(self.notes)}


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


def parse_param_map(items: list[str]) -> dict[str, str]:
    """``["p=ranks", ...]``: A's parameter name -> B's."""
    out: dict[str, str] = {}
    for item in items:
        old, sep, new = item.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise CompareError(f"--param-map {item!r}: give OLD=NEW (A's parameter name = B's)")
        if old in out:
            raise CompareError(f"--param-map {item!r}: {old} is mapped twice")
        out[old] = new
    return out


def parse_at(text: str | None) -> dict[str, float]:
    """``"n=4000,p=16"`` -> {"n": 4000.0, "p": 16.0} (B's parameter names)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not name or not (math.isfinite(number) and number > 0):
            raise CompareError(f"--at {text!r}: give NAME=VALUE,... with values > 0 (e.g. n=4000,p=16)")
        out[name] = number
    return out


def parse_threshold(text: str) -> float:
    """``5%`` or ``0.05`` -> 0.05."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value < 10):
        raise CompareError(f"--threshold {text!r}: give a relative change such as 5% or 0.05")
    return value


def compare(a: Side, b: Side, threshold: float = THRESHOLD, at: dict[str, float] | None = None,
            param_map: dict[str, str] | None = None, min_share: float = MIN_SHARE, alpha: float = ALPHA,
            level: float = LEVEL, absolute: bool = False) -> CompareResult:
    """Match the two sides' studies, call paths, metrics and parameters by name and compare each pair."""
    param_map = dict(param_map or {})
    at = dict(at or {})
    one_sided: list[tuple[str, str, str]] = []
    studies_a, studies_b = dict(a.studies), dict(b.studies)
    if len(studies_a) == 1 and len(studies_b) == 1 and set(studies_a) != set(studies_b) and \
            (EXTRAP_STUDY in studies_a or EXTRAP_STUDY in studies_b or not _is_results(a) or not _is_results(b)):
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
        row.gated = bool(row.share >= min_share)
    _decide(rows, threshold, alpha)
    rows.sort(key=lambda r: (not r.gated, -abs(r.impact) if math.isfinite(r.impact) else 0.0))
    return CompareResult(a.path, b.path, rows, one_sided, threshold, alpha, level, min_share, param_map, shifts,
                         absolute)


def _is_results(side: Side) -> bool:
    return _is_results_dir(Path(side.path))


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


def _predict(model: Model, x: np.ndarray, cache: dict | None = None) -> float:
    """The model at one point ``x``; each term evaluated once per ``cache`` (resamples share terms)."""
    cache = {} if cache is None else cache
    total = float(model.coefficients[0])
    for c, term in zip(model.coefficients[1:], model.terms):
        value = cache.get(id(term))  # (the terms outlive the cache)
        if value is None:
            with np.errstate(all="ignore"):
                value = cache[id(term)] = float(term.values(x[None])[0])
        total += float(c) * value
    return (1.0 / total if total else math.inf) if model.reciprocal else total


def _totals(entries: dict, target: np.ndarray, order: list[int] | None) -> dict[str, float]:
    """Per metric the total at the target: the region ``all`` where there is one, else the sum over
    regions; a time's (a region's time, a rank's phase) is the total time (``TOTAL``)."""
    x = target if order is None else target[np.argsort(order)]
    out: dict[str, float] = {}
    for (region, metric), e in entries.items():
        if region == "all":
            out[metric] = abs(_predict(e.model, x))
    with_all = set(out)
    for (region, metric), e in entries.items():
        if metric not in with_all:
            out[metric] = out.get(metric, 0.0) + abs(_predict(e.model, x))
    if TOTAL in out:
        out.update({metric: out[TOTAL] for metric in out if is_time_metric(metric)})
    return out


def _resampled(model: Model, x: np.ndarray) -> np.ndarray:
    cache: dict = {}
    return np.array([_predict(b, x, cache) for b in model.bootstrap])


def _row(study: str, key: tuple[str, str], ea: Entry, eb: Entry, names: list[str], order: list[int],
         target: np.ndarray, totals: tuple[dict, dict], threshold: float, level: float) -> Row:
    region, metric = key
    xa = target[np.argsort(order)]  # the target in A's parameter order
    pa, pb = _predict(ea.model, xa), _predict(eb.model, target)
    ra, rb = _resampled(ea.model, xa), _resampled(eb.model, target)
    notes: list[str] = []
    ratio = pb / pa if pa != 0 else math.nan
    se = math.nan
    if pa > 0 and pb > 0 and len(ra) > 1 and len(rb) > 1 and np.all(ra > 0) and np.all(rb > 0):
        se = math.hypot(float(np.std(np.log(ra), ddof=1)), float(np.std(np.log(rb), ddof=1)))
    elif len(ra) > 1 and len(rb) > 1 and pa > 0 and pb > 0:  # a resample not positive: delta method
        se = math.hypot(float(np.std(ra, ddof=1)) / pa, float(np.std(rb, ddof=1)) / pb)
    if not (len(ea.model.bootstrap) and len(eb.model.bootstrap)):
        notes.append("no resamples on " + ("both sides" if not (ea.model.bootstrap or eb.model.bootstrap)
                                             else "side A" if not ea.model.bootstrap else "side B")
                     + ": no interval (fitted without repetitions)")
    if not (pa > 0 and pb > 0):
        notes.append(f"prediction not positive at the target (A {pa:.3g}, B {pb:.3g}): no ratio test")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    log_r = math.log(ratio) if ratio > 0 else math.nan
    low, high = (math.exp(log_r - z * se), math.exp(log_r + z * se)) if math.isfinite(se) else (math.nan, math.nan)
    total_a = totals[0].get(metric, math.nan)
    total_b = totals[1].get(metric, math.nan)
    share = max(abs(pa) / total_a if total_a else math.nan, abs(pb) / total_b if total_b else math.nan)
    impact = (pb - pa) / total_a if total_a else math.nan
    scaling = _scaling(ea.model, eb.model, names, order, metric)
    rate = is_rate_metric(metric)
    if rate:
        notes.append("a rate: more is better")
    return Row(study, region, metric, str(ea.model), str(eb.model), _orders_text(ea.model, names, order),
               lead.format_orders(eb.model), ea.model.lead_share, eb.model.lead_share, scaling,
               dict(zip(names, map(float, target))), pa, pb, ratio, low, high, math.nan, math.nan,
               share if math.isfinite(share) else 0.0, impact, False, se=se, notes=notes, order=list(order),
               names_a=list(ea.model.param_names), entry_a=ea, entry_b=eb)


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
        if math.isfinite(r.se) and r.se > 0 and math.isfinite(log_r):
            p_up = _sf((log_r - band) / r.se)  # H0: ratio <= 1 + t (no increase beyond the threshold)
            p_down = _sf((-log_r - band) / r.se)  # H0: ratio >= 1 / (1 + t)
            r.p_value = min(1.0, 2 * min(p_up, p_down))
        elif r.se == 0 and math.isfinite(log_r):
            r.p_value = 0.0 if abs(log_r) > band else 1.0
        else:
            r.p_value = math.nan
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


def _sf(z: float) -> float:
    """The standard normal's upper tail (exact far out, where 1 - cdf is 0)."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def _orders_text(model: Model, names: list[str], order: list[int]) -> str:
    """A's lead orders, its parameters named as B's."""
    renamed = Model([names[order.index(k)] for k in range(len(names))], model.terms, model.coefficients,
                    reciprocal=model.reciprocal)
    return lead.format_orders(renamed)


def _renamed_orders(model: Model, names: list[str], order: list[int]) -> dict[str, lead.Order]:
    a_names = [names[order.index(k)] for k in range(len(names))]
    return {a_names[model.param_names.index(p)]: o for p, o in lead.lead_orders(model).items()}


def _scaling(a: Model, b: Model, names: list[str], order: list[int], metric: str, confidence: float = 0.95) -> str:
    """same / worse / better / changed / class uncertain (see the module's docstring)."""
    oa, ob = _renamed_orders(a, names, order), lead.lead_orders(b)
    ranges = _common_ranges(a, b, names, order)
    if lead.orders_agree(oa, ob, ranges=ranges):
        return "same"
    if not (a.lead_share >= lead.STABLE and b.lead_share >= lead.STABLE):  # NaN (no resamples): not stable
        return "class uncertain"
    ga, gb = _resampled_growth(a, names, order, ranges), _resampled_growth(b, names, None, ranges)
    tol = float(lead.EXPONENT_TOLERANCE) + 1e-12
    faster = slower = False
    for k, n in enumerate(names):
        point = _growth(ob[n], ranges.get(n)) - _growth(oa[n], ranges.get(n))
        diff = gb[:, k][None, :] - ga[:, k][:, None]  # every pair of resamples (A's i, B's j)
        faster |= bool(point > tol and np.mean(diff > 0) >= confidence)
        slower |= bool(point < -tol and np.mean(diff < 0) >= confidence)
    if not (faster or slower):
        return "class uncertain"
    if is_rate_metric(metric):  # a rate that falls faster is worse (lead orders of 1/f are negated)
        faster, slower = slower, faster
    return "worse" if faster and not slower else "better" if slower and not faster else "changed"


def _resampled_growth(model: Model, names: list[str], order: list[int] | None, ranges: lead.Ranges) -> np.ndarray:
    """Resamples x parameters (B's names): how each resampled model's lead order grows over the range."""
    rows = []
    for boot in model.bootstrap:
        orders = _renamed_orders(boot, names, order) if order is not None else lead.lead_orders(boot)
        rows.append([_growth(orders[n], ranges.get(n)) for n in names])
    return np.array(rows, dtype=float).reshape(len(rows), len(names))


def _growth(order: lead.Order, span: tuple[float, float] | None) -> float:
    if span is not None and 1 < span[0] < span[1]:
        return lead.growth(order, *span)
    return float(order[0]) + order[1] / 4  # a log2 power as 1/4 (compare.order_distance)


def _common_ranges(a: Model, b: Model, names: list[str], order: list[int]) -> lead.Ranges:
    """Per parameter (B's names) the range both models were measured over (their union where they do
    not overlap)."""
    ra, rb = lead.measured_ranges(a), lead.measured_ranges(b)
    a_names = [names[order.index(k)] for k in range(len(names))]
    ra = {a_names[a.param_names.index(p)]: v for p, v in ra.items()}
    out = {}
    for n in names:
        if n in ra and n in rb:
            lo, hi = max(ra[n][0], rb[n][0]), min(ra[n][1], rb[n][1])
            out[n] = (lo, hi) if lo < hi else (min(ra[n][0], rb[n][0]), max(ra[n][1], rb[n][1]))
        elif n in ra or n in rb:
            out[n] = ra.get(n) or rb[n]
    return out


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count)."""
    idx = [i for i, p in enumerate(p_values) if math.isfinite(p)]
    m = len(idx)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def _decide(rows: list[Row], threshold: float, alpha: float) -> None:
    gated = [r for r in rows if r.gated]
    for r, p in zip(gated, holm([r.p_value for r in gated])):
        r.p_adjusted = p
    band = math.log1p(threshold)
    for r in rows:
        more_is_better = is_rate_metric(r.metric)
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
        if not r.gated:
            r.notes.append(f"not gating: {r.share:.1%} of the total at the target (--min-share)")


# ---------------------------------------------------------------------------------------------------------------


COLUMNS = ["verdict", "study", "region", "metric", "ratio", "interval", "relative", "share", "impact", "scaling",
           "orders_a", "orders_b", "target", "notes"]


def display_table(result: CompareResult) -> pd.DataFrame:
    rows = []
    for r in result.rows:
        rows.append({
            "verdict": r.verdict + ("" if r.gated else " (not gating)"),
            "study": r.study, "region": r.region, "metric": r.metric,
            "ratio": f"{r.ratio:.3f}" if math.isfinite(r.ratio) else "-",
            "interval": f"[{r.low:.3f}, {r.high:.3f}]" if math.isfinite(r.low) else "-",
            "relative": "-" if r.shift == 1.0 else f"{r.relative:.3f}" + (
                f" [{r.rel_low:.3f}, {r.rel_high:.3f}]" if math.isfinite(r.rel_low) else ""),
            "share": f"{r.share:.1%}", "impact": f"{r.impact:+.1%}" if math.isfinite(r.impact) else "-",
            "scaling": r.scaling, "orders_a": r.orders_a, "orders_b": r.orders_b,
            "target": ", ".join(f"{k}={v:g}" for k, v in r.target.items()),
            "notes": "; ".join(n for n in r.notes if not n.startswith(("not gating", "scaling class worse", "judged"))),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def summary_lines(result: CompareResult) -> list[str]:
    c = result.counts()
    gated = len(result.rows) - c["not gated"]
    lines = [f"# compare A = {result.a}  B = {result.b}",
             f"# {len(result.rows)} rows ({gated} gating: share >= {result.min_share:.0%} of the total at the target); "
             f"threshold {result.threshold:.1%}, Holm-corrected at alpha {result.alpha:g}, "
             f"{result.level:.0%} intervals of B/A"]
    lines.append("# " + ", ".join(f"{k}: {v}" for k, v in c.items()))
    for study, shift in result.shifts.items():
        if shift != 1.0:
            lines.append(f"# study {study}: common shift B/A x{shift:.3f} (the median row; the host's speed or a change "
                         "of everything): verdicts judge each row's ratio relative to it (--absolute: the raw ratios)")
    for side, what, name in result.one_sided:
        lines.append(f"# only in {side} ({result.a if side == 'A' else result.b}): {what} {name}")
    if result.param_map:
        lines.append("# parameters mapped: " + ", ".join(f"{k} (A) = {v} (B)" for k, v in result.param_map.items()))
    code = result.exit_code()
    lines.append("# result: " + ("REGRESSION (exit 1): " + ", ".join(
        f"{r.study}/{r.region}/{r.metric}" for r in result.rows if r.gates()) if code else "no gated regression (exit 0)"))
    return lines


def render(result: CompareResult, fmt: str = "text") -> str:
    """The table as text (terminal), md, csv or json."""
    if fmt == "json":
        return json.dumps({"a": result.a, "b": result.b, "threshold": result.threshold, "alpha": result.alpha,
                           "level": result.level, "min_share": result.min_share, "param_map": result.param_map,
                           "correction": "holm", "absolute": result.absolute, "shifts": result.shifts,
                           "exit_code": result.exit_code(), "counts": result.counts(),
                           "one_sided": [{"side": s, "what": w, "name": n} for s, w, n in result.one_sided],
                           "rows": [_strict(r.record()) for r in result.rows]}, indent=1) + "\n"
    if fmt == "csv":
        return result.table().to_csv(index=False)
    table = display_table(result)
    head = "\n".join(summary_lines(result)) + "\n"
    if fmt == "md":
        return head + "\n" + (to_markdown(table) if len(table) else "(no rows)\n")
    return head + (table.to_string(index=False) if len(table) else "(no rows)") + "\n"


def _strict(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
