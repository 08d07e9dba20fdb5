"""The ratio B/A of a paired measurement (config key ``variants:``): from the runs that ran back to back.

In every repetition round each configuration's variants ran one right after the other, so the host's
drift of that moment falls on both runs of a pair; the log ratio of the pair, log(B_ck / A_ck) for
configuration c and round k (the k-th repetition: the aggregate's ``values`` are in repetition order),
holds the change and the noise faster than a pair of runs, not the drift between rounds or sweeps. The
ratio at the target is modelled over every configuration both variants measured:

- a constant log ratio (one change everywhere: a whole program slower, a region slower) unless
- a trend in the log of the varied parameters explains the pairs better (an F test at ``TREND``): a
  change that grows with the size, as a faster-growing term makes it; then the log ratio is linear in
  the logs and the target is predicted from it.

Its standard error is least squares' from the pairs' residuals, and the test is Student's t with the
residual degrees of freedom (pairs minus coefficients). The model's forms and resamples are not needed
for this ratio; the scaling class still compares them (perfsweep.compare.statistics.scaling).

    log_r, se, df, note = paired_ratio(a, b, order, target)    # None: too few pairs
"""

from __future__ import annotations

import math

import numpy as np

TREND = 0.05  # p-value below which the trend in the parameters is kept (else one ratio everywhere)
MIN_PAIRS = 3


def pairs(a, b, order: list[int]) -> tuple[np.ndarray, np.ndarray, int]:
    """(points in B's parameter order, log ratios) of every pair of runs of the same configuration and
    round that both sides measured with positive values, and the number of rounds."""
    if a.rounds is None or b.rounds is None or not len(a.points) or not len(b.points):
        return np.empty((0, len(order))), np.empty(0), 0
    pa = a.points[:, order]
    xs, ds, rounds = [], [], 0
    for i, x in enumerate(b.points):
        match = np.flatnonzero(np.all(np.isclose(pa, x), axis=1))
        if not len(match):
            continue
        ra, rb = a.rounds[match[0]], b.rounds[i]
        for k in range(min(len(ra), len(rb))):
            if ra[k] > 0 and rb[k] > 0 and math.isfinite(ra[k]) and math.isfinite(rb[k]):
                xs.append(x)
                ds.append(math.log(rb[k] / ra[k]))
                rounds = max(rounds, k + 1)
    return np.array(xs, float).reshape(len(xs), len(order)), np.array(ds), rounds


def paired_ratio(a, b, order: list[int], target: np.ndarray) -> tuple[float, float, float, str] | None:
    """log B/A at ``target`` (B's parameter order), its standard error, degrees of freedom and a note;
    None where fewer than MIN_PAIRS pairs (or no positive values) are at hand."""
    x, d, rounds = pairs(a, b, order)
    if len(d) < MIN_PAIRS or np.any(target <= 0):
        return None
    varying = [j for j in range(x.shape[1]) if len(np.unique(x[:, j])) > 1 and np.all(x[:, j] > 0)]
    constant = _fit(np.ones((len(d), 1)), d, np.ones(1))
    chosen, kind = constant, "one ratio over all configurations"
    if varying and len(d) - len(varying) - 1 >= 2:
        design = np.column_stack([np.ones(len(d)), *(np.log(x[:, j]) for j in varying)])
        trend = _fit(design, d, np.r_[1.0, np.log(target[varying])])
        if _trend_p(constant, trend, len(varying)) < TREND:
            chosen, kind = trend, "the ratio's trend in the parameters at the target"
    log_r, se, df, _ = chosen
    note = f"paired: {len(d)} pairs of runs in {rounds} rounds, {kind}"
    return log_r, se, df, note


def _fit(design: np.ndarray, d: np.ndarray, at: np.ndarray) -> tuple[float, float, float, float]:
    """Least squares of the log ratios ``d``: (prediction at ``at``, its standard error, residual df, RSS)."""
    beta, *_ = np.linalg.lstsq(design, d, rcond=None)
    resid = d - design @ beta
    df = len(d) - design.shape[1]
    rss = float(resid @ resid)
    s2 = rss / df if df > 0 else math.nan
    cov = s2 * np.linalg.pinv(design.T @ design)
    return float(at @ beta), float(math.sqrt(max(at @ cov @ at, 0.0))), float(df), rss


def _trend_p(constant: tuple, trend: tuple, extra: int) -> float:
    """The F test's p-value of the trend's ``extra`` coefficients over one ratio everywhere."""
    rss0, rss1, df1 = constant[3], trend[3], trend[2]
    if df1 <= 0 or rss1 <= 0:
        return 0.0 if rss0 > rss1 else 1.0
    f = ((rss0 - rss1) / extra) / (rss1 / df1)
    from scipy.stats import f as fisher  # heavy: paired comparisons only

    return float(fisher.sf(f, extra, df1))
