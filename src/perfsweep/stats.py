"""Statistics of repeated measurements: the coefficient of variation (the variability table's and the
adaptive repetitions' target), the good runs' times, the median's confidence interval, a run's cost,
and the lack of fit of a model to the medians against the repetitions' own noise."""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np


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


def lack_of_fit(residuals: Iterable[float], coefficients: int, times: Iterable[list[float]]) -> dict[str, float] | None:
    """How far a model misses the medians it was fitted to, against what their repetitions' noise makes
    them stray (the lack-of-fit F test of a regression with repeated measurements, in log time).

    ``residuals``: log(median / prediction) at the fitted configurations; ``coefficients``: the model's
    (its constant included); ``times``: every fitted configuration's repeated times. The pure error is
    the repetitions' variance of log time, robustly: the median over the configurations of each one's
    variance, scaled by what that median is for normal noise. A median's variance is taken as the mean's
    times pi/2 at 3 and more repetitions (its limit; larger than at few repetitions, so the test says
    "misfit" only where it is), over the repetitions' harmonic mean. Returns {"misfit": the residuals'
    root mean square per degree of freedom, "noise": a median's standard error, both in log units (about
    a fraction), "F", "p": the chance of an F this large from noise alone}, or None where the residuals
    or the repetitions leave no degree of freedom."""
    r = np.array([x for x in residuals if math.isfinite(x)], dtype=float)
    df_fit = len(r) - coefficients
    logs = [np.log(np.asarray(t, dtype=float)) for t in times if len(t) >= 2 and min(t) > 0]
    df_pure = sum(len(x) - 1 for x in logs)
    if df_fit < 1 or df_pure < 1:
        return None
    # the pure error robustly: each configuration's variance over what its median would be from noise
    # alone (chi2's), their median: a few configurations whose runs a busy host disturbed do not make
    # every median look noisy (the median of their runs is robust against them too)
    from scipy.stats import chi2, f as f_dist  # here: scipy.stats takes seconds to import, and few need it

    pure = float(np.median([np.var(x, ddof=1) / (chi2.median(len(x) - 1) / (len(x) - 1)) for x in logs]))
    k = len(logs) / sum(1.0 / len(x) for x in logs)  # the repetitions' harmonic mean
    noise2 = pure / k * (math.pi / 2 if k >= 3 else 1.0)
    misfit2 = float(np.sum(r ** 2)) / df_fit
    if noise2 <= 0:
        return {"misfit": math.sqrt(misfit2), "noise": 0.0, "F": math.inf, "p": 0.0}
    F = misfit2 / noise2
    return {"misfit": math.sqrt(misfit2), "noise": math.sqrt(noise2), "F": F, "p": float(f_dist.sf(F, df_fit, df_pure))}
