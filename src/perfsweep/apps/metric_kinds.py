"""What a metric is: its unit and which way is better. The one place every consumer asks (the
aggregate and its tables, the models and models.json, ``perfsweep predict``, the report, compare).

A metric's kind is declared where it comes from:

- the run's own metrics (its time and the ranks' phases, ``registry.RUN_METRICS``) and a built-in
  app's (``registry.BuiltinApp.metrics``): times in s, lower is better;
- an external app's ``time_pattern``: the run's time, in s;
- an external app's pattern in its mapping form,
  ``patterns: {rate: {pattern: 'rate: ([0-9.eE+-]+)', unit: steps/s, better: higher}}``.

The name is only a fallback (:func:`guess`): a pattern in its plain string form (``{name: regex}``),
a Score-P profile's metrics, and results trees written before the declaration (an aggregate without
``unit``/``better`` columns, a models.json entry without them)::

    kind_of("timesteps_per_s")                        # guessed: MetricKind(unit='1/s', better='higher')
    kind_of("rate", declared(app))                    # declared: MetricKind(unit='steps/s', better='higher')
    kind_of("rate", row=entry)                        # from a models.json entry or an aggregate row
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from perfsweep.apps.registry import BUILTIN_APPS, RUN_METRIC_KIND, RUN_METRICS

LOWER, HIGHER = "lower", "higher"
BETTER = (LOWER, HIGHER)
SECONDS = "s"


@dataclass(frozen=True)
class MetricKind:
    unit: str = ""  # "" where unknown (a guessed count)
    better: str = LOWER  # lower: a cost (a time, bytes); higher: a rate (steps/s, GFLOP/s, a bandwidth)
    declared: bool = False  # from the config or an app's declaration, not guessed from the name

    @property
    def is_time(self) -> bool:
        """A time in seconds: a share of the run's time makes sense for it."""
        return self.unit == SECONDS and self.better == LOWER

    @property
    def higher_is_better(self) -> bool:
        return self.better == HIGHER

    def suffix(self) -> str:
        """The unit as a value's suffix: `` s``, `` steps/s``, or nothing."""
        return f" {self.unit}" if self.unit else ""

    def fields(self) -> dict[str, str]:
        """What the aggregate's rows and models.json's entries carry: ``unit`` and ``better``."""
        return {"unit": self.unit, "better": self.better}


TIME = MetricKind(*RUN_METRIC_KIND, declared=True)

# a rate by its name: .../s, ..._per_s, per second, FLOP/s, a rate, a throughput or a bandwidth
_RATE = re.compile(r"(/|(?<![a-z])per[ _]?)\s*(s|sec|second)s?$|flop|rate|throughput|bandwidth|/s\b", re.IGNORECASE)


def guess(metric: str) -> MetricKind:
    """The kind a metric's name suggests (nothing declared): a rate (``timesteps_per_s``, ``GFLOP/s``:
    higher is better, unit ``1/s``), a time (``*time*`` not a rate: s), else a count without unit
    (visits, bytes), lower is better."""
    if metric in RUN_METRICS:
        return TIME
    if _RATE.search(metric):
        return MetricKind("1/s", HIGHER)
    if "time" in metric.lower():
        return MetricKind(SECONDS, LOWER)
    return MetricKind("", LOWER)


def pattern_regex(spec: str | Mapping[str, Any]) -> str:
    """The regex of one ``patterns`` entry: the plain string form, or the mapping form's ``pattern``."""
    return spec if isinstance(spec, str) else spec["pattern"]


def pattern_regexes(patterns: Mapping[str, Any] | None) -> dict[str, str]:
    """An app's ``patterns`` as name -> regex (how a run's output is read; the unit reads nothing)."""
    return {name: pattern_regex(spec) for name, spec in (patterns or {}).items()}


def declared(app: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The kinds an app's config mapping declares, name -> {unit, better}: the run's own metrics, a
    built-in app's, and an external app's patterns in the mapping form (a plain string declares none)."""
    out = {name: TIME.fields() for name in RUN_METRICS}
    if "name" in app and app["name"] in BUILTIN_APPS:
        out.update({name: MetricKind(*kind).fields() for name, kind in BUILTIN_APPS[app["name"]].metrics.items()})
    for name, spec in (app.get("patterns") or {}).items():
        if isinstance(spec, Mapping):
            out[name] = {"unit": str(spec.get("unit", "")), "better": str(spec.get("better", LOWER))}
    return out


def _text(value: Any) -> str | None:
    """A unit or direction read from a table or JSON (None, NaN or empty: not there)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def kind_of(metric: str, declarations: Mapping[str, Mapping[str, Any]] | None = None,
            row: Mapping[str, Any] | None = None) -> MetricKind:
    """The kind of ``metric``: from ``row`` (an aggregate row or a models.json entry with ``better``
    and ``unit``), else from ``declarations`` (:func:`declared`), else guessed from its name."""
    for source in (row, (declarations or {}).get(metric)):
        if source is not None and _text(source.get("better")) in BETTER:
            return MetricKind(_text(source.get("unit")) or "", str(source["better"]), declared=True)
    return guess(metric)
