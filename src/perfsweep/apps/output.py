"""What an external app's output gives: its time and extra metrics, read with the config's regexes.

The runner reads every run's stdout with :func:`extract_metrics`; ``perfsweep validate CONFIG
--sample-output FILE`` shows, with :func:`check_sample`, what the same patterns extract from a saved
output, so that a regex is checked before a sweep is spent on it::

    app = {"time_pattern": r"Loop time of ([0-9.eE+-]+)", "patterns": {"gflops": r"GFLOP/s: (\\S+)"}}
    extract_metrics("Loop time of 1.23 on 4 procs", app)    # ValueError: pattern 'gflops' ... not found
    check_sample("Loop time of 1.23 on 4 procs", app)       # [Extraction(time=1.23), Extraction(gflops: not found)]
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from perfsweep.apps.metric_kinds import pattern_regexes

QUOTE_LINES = 5  # lines of an app's output that a failure record quotes


def last_lines(text: str, n: int = QUOTE_LINES, width: int = 200) -> str:
    """The last ``n`` non-empty lines of ``text``, each cut to ``width`` characters, joined by `` | ``:
    what a failure record quotes of an app's output so that its error says what the app printed."""
    lines = [line.strip()[:width] for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


@dataclass(frozen=True)
class Extraction:
    """One pattern applied to one output: its value, or why there is none."""

    name: str  # "time" for the time_pattern, else the metric's name
    what: str  # how a message names it: "time_pattern" or "pattern 'gflops'"
    pattern: str
    value: float | None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _patterns(app: dict[str, Any]) -> list[tuple[str, str, str]]:
    items = [("time", "time_pattern", app["time_pattern"])] if app.get("time_pattern") else []
    return items + [(name, f"pattern {name!r}", pat) for name, pat in pattern_regexes(app.get("patterns")).items()]


def extract(name: str, what: str, pattern: str, text: str) -> Extraction:
    """The number that the first group of ``pattern`` matches first in ``text`` (multi-line mode): finite,
    and >= 0 for the time."""
    try:
        regex = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        return Extraction(name, what, pattern, None, f"is not a valid regular expression ({exc})")
    if regex.groups < 1:
        return Extraction(name, what, pattern, None, "has no group: put the number in parentheses, e.g. ([0-9.eE+-]+)")
    match = regex.search(text)
    if not match:
        return Extraction(name, what, pattern, None, "not found on stdout")
    try:
        value = float(match.group(1))
    except (TypeError, ValueError):
        return Extraction(name, what, pattern, None, f"matched {match.group(1)!r}, not a number")
    is_time = what == "time_pattern"
    if not math.isfinite(value) or (is_time and value < 0):
        return Extraction(name, what, pattern, None,
                          f"matched {match.group(1)!r}, not a finite number{' >= 0' if is_time else ''}")
    return Extraction(name, what, pattern, value)


def check_sample(text: str, app: dict[str, Any]) -> list[Extraction]:
    """Every pattern of an app's config mapping applied to one output, the time_pattern first."""
    return [extract(name, what, pattern, text) for name, what, pattern in _patterns(app)]


def extract_metrics(text: str, app: dict[str, Any]) -> dict[str, Any]:
    """Apply an app's ``time_pattern`` and ``patterns`` (its config mapping) to its output ``text``.

    Returns ``{"time": t or None (no time pattern), "metrics": {name: value, ...}}``. Raises ValueError
    with one line that names the first pattern that fails and quotes the last lines of the output."""
    found: dict[str, Any] = {"time": None, "metrics": {}}
    for e in check_sample(text, app):
        if not e.ok:
            raise ValueError(f"{e.what} ({e.pattern}) {e.problem}; last lines: {last_lines(text)}")
        if e.what == "time_pattern":
            found["time"] = e.value
        else:
            found["metrics"][e.name] = e.value
    return found
