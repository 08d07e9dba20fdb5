"""What an external app's output gives: its time and extra metrics, read with the config's regexes.

The runner reads every run's stdout with :func:`extract_metrics`; ``perfsweep validate CONFIG
--sample-output FILE`` shows, with :func:`check_sample`, what the same patterns extract from a saved
output, so that a regex is checked before a sweep is spent on it::

    found = check_sample("Loop time of 1.23 on 4 procs", r"Loop time of ([0-9.eE+-]+)", {})
    found[0].value == 1.23
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Extraction:
    """One pattern applied to one output: its value, or why there is none."""

    name: str
    pattern: str
    value: float | None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def extract(name: str, pattern: str, text: str) -> Extraction:
    """The number that the first group of ``pattern`` matches first in ``text`` (multi-line mode)."""
    try:
        regex = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        return Extraction(name, pattern, None, f"invalid regular expression ({exc})")
    if regex.groups < 1:
        return Extraction(name, pattern, None, "has no group: put the number in parentheses, e.g. ([0-9.eE+-]+)")
    match = regex.search(text)
    if not match:
        return Extraction(name, pattern, None, "not found in the output")
    try:
        return Extraction(name, pattern, float(match.group(1)))
    except (TypeError, ValueError):
        return Extraction(name, pattern, None, f"matched {match.group(1)!r}, which is not a number")


def check_sample(text: str, time_pattern: str | None, patterns: dict[str, str]) -> list[Extraction]:
    """Every pattern of an app applied to one output: ``time`` (if a time_pattern is set) first."""
    found = [extract("time", time_pattern, text)] if time_pattern else []
    return found + [extract(name, pattern, text) for name, pattern in patterns.items()]


def extract_metrics(text: str, time_pattern: str | None, patterns: dict[str, str]) -> tuple[float | None, dict[str, float]]:
    """(time, or None without a time_pattern; {metric: value}); a ValueError names the first pattern that fails."""
    time = None
    if time_pattern:
        e = extract("time", time_pattern, text)
        if not e.ok:
            raise ValueError(f"time_pattern ({time_pattern}) {e.problem}")
        time = e.value
    metrics = {}
    for name, pattern in patterns.items():
        e = extract(name, pattern, text)
        if not e.ok:
            raise ValueError(f"pattern {name!r} ({pattern}) {e.problem}")
        metrics[name] = e.value
    return time, metrics


def last_lines(text: str, n: int = 5, width: int = 200) -> str:
    """The last ``n`` non-empty lines of an output, each cut to ``width`` characters, joined by ' | '."""
    lines = [line.rstrip()[:width] for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"
