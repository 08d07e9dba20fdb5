"""Statistics of repeated measurements: the coefficient of variation (the variability table's and the
adaptive repetitions' target), the good runs' times, the median's confidence interval, a run's cost."""

from __future__ import annotations

import math
from typing import Any, Iterable


# a configuration's median comes from disturbed runs (a busy host: perfsweep.tables.disturbed_runs) where more
# than this share of its successful runs was disturbed: measured again until decided (perfsweep.steps.decide),
# and its mean may have moved by more than its repetitions show (perfsweep.modeling.pipeline.drift_points)
DISTURBED_CONFIGURATION = 0.5


def ok_times(records: Iterable[dict[str, Any]]) -> list[float]:
    """The measured times of the good runs (status ok, a numeric time) among ``records``."""
    return [float(r["time"]) for r in records if r.get("status") == "ok" and isinstance(r.get("time"), (int, float))]


def cv_of(times: Iterable[float]) -> float:
    """The coefficient of variation of repeated times: the sample standard deviation (ddof 1) over the
    mean (seed 001, Table 1; the variability table's and the adaptive repetitions' target); NaN below
    2 values or for a mean <= 0."""
    times = list(times)
    n = len(times)
    if n < 2:
        return math.nan
    mean = sum(times) / n
    if mean <= 0:
        return math.nan
    var = sum((t - mean) ** 2 for t in times) / (n - 1)
    return math.sqrt(var) / mean


def median_ci(times: list[float], level: float = 0.95) -> tuple[float, float, float] | None:
    """(low, median, high): the distribution-free confidence interval of the median from order
    statistics (the widest symmetric pair whose binomial coverage is >= level), None if n is too small
    for the level (e.g. n < 6 at 0.95)."""
    x = sorted(times)
    n = len(x)
    if n == 0:
        return None
    med = x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])
    best = None
    for j in range(1, n // 2 + 1):  # interval [x_(j), x_(n-j+1)], 1-based
        tail = sum(math.comb(n, i) for i in range(j)) / 2.0 ** n  # P(B(n, 1/2) <= j - 1)
        if 1 - 2 * tail >= level:
            best = j
        else:
            break
    if best is None:
        return None
    return x[best - 1], med, x[n - best]


def min_ci_runs(level: float) -> int:
    """The fewest repetitions whose extremes bound the median at ``level``."""
    n = 1
    while 1 - 2 * 0.5 ** n < level:
        n += 1
    return n


def core_seconds(record: dict[str, Any], processes: str) -> float:
    """The cores a run held times its launch's wall time."""
    wall = record.get("wall_time")
    p = (record.get("parameters") or {}).get(processes, 1)
    ok = isinstance(wall, (int, float)) and math.isfinite(wall) and isinstance(p, (int, float))
    return float(wall) * float(p) if ok else 0.0
