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

The fit is robust (Huber's M-estimate): a pair one of whose runs the host interrupted is down-weighted
instead of doubling the standard error. The standard error is Huber's, from the pairs' residuals, and
the test is Student's t with the residual degrees of freedom (pairs minus coefficients). The model's forms and resamples are not needed
for this ratio; the scaling class still compares them (perfsweep.compare.statistics.scaling).

    log_r, se, df, note = paired_ratio(a, b, order, target)    # None: too few pairs
"""

from __future__ import annotations

import math

import numpy as np

HUBER = 1.345  # Huber's tuning constant (in robust scale units)
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
    ones = np.ones((len(d), 1))
    chosen, kind = _huber(ones, d, np.ones(1)), "one ratio over all configurations"
    if varying and len(d) - len(varying) - 1 >= 2:
        design = np.column_stack([np.ones(len(d)), *(np.log(x[:, j]) for j in varying)])
        trend = _huber(design, d, np.r_[1.0, np.log(target[varying])])
        if _trend_p(ones, design, d, trend.weights) < TREND:
            chosen, kind = trend, "the ratio's trend in the parameters at the target"
    note = f"paired: {len(d)} pairs of runs in {rounds} rounds, {kind}"
    if chosen.down:
        note += f" ({chosen.down} pairs down-weighted as outliers)"
    return chosen.at, chosen.se, chosen.df, note


class _Fit:
    """A robust fit of the log ratios: the prediction ``at`` the target, its standard error, the residual
    degrees of freedom, the weights of the pairs and how many were down-weighted."""

    def __init__(self, at: float, se: float, df: float, weights: np.ndarray):
        self.at, self.se, self.df, self.weights = at, se, df, weights
        self.down = int(np.sum(weights < 1))


def _huber(design: np.ndarray, d: np.ndarray, at: np.ndarray) -> _Fit:
    """Huber's M-estimate (HUBER: the usual 95 % efficiency at normal noise) by iteratively reweighted
    least squares, scale from the residuals' median absolute deviation. A run the host interrupted makes
    its pair's ratio an outlier (one-sided, far in the tail); least squares would let one such pair of 25
    double the standard error. Covariance: Huber's (1981) asymptotic one, with his small-sample factor."""
    n, p = design.shape
    beta = np.linalg.lstsq(design, d, rcond=None)[0]
    w = np.ones(n)
    scale = 0.0
    for _ in range(50):
        resid = d - design @ beta
        scale = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
        if scale <= 1e-12:
            break
        u = np.abs(resid) / scale
        w = np.minimum(1.0, HUBER / np.maximum(u, 1e-300))
        new = np.linalg.lstsq(design * np.sqrt(w)[:, None], d * np.sqrt(w), rcond=None)[0]
        if np.allclose(new, beta, rtol=0, atol=1e-10):
            beta = new
            break
        beta = new
    resid = d - design @ beta
    df = float(n - p)
    inverse = np.linalg.pinv(design.T @ design)
    if scale <= 1e-12:  # (nearly) all pairs on the line: least squares' own error
        s2 = float(resid @ resid) / df if df > 0 else math.nan
        return _Fit(float(at @ beta), float(math.sqrt(max(at @ inverse @ at * s2, 0.0))), df, np.ones(n))
    u = resid / scale
    psi, inside = np.clip(u, -HUBER, HUBER), np.abs(u) < HUBER
    m = max(float(np.mean(inside)), 1.0 / n)
    factor = (1 + p / n * (1 - m) / m) ** 2  # Huber's small-sample correction K^2
    var = factor * float(np.sum(psi ** 2)) / df / m ** 2 * scale ** 2 if df > 0 else math.nan
    return _Fit(float(at @ beta), float(math.sqrt(max(at @ inverse @ at * var, 0.0))), df, w)


def _trend_p(constant: np.ndarray, trend: np.ndarray, d: np.ndarray, w: np.ndarray) -> float:
    """The F test's p-value of the trend's extra coefficients over one ratio everywhere, on the pairs
    weighted as the robust fit of the trend weighted them (an outlier makes no trend)."""
    rss = []
    for design in (constant, trend):
        sw = np.sqrt(w)
        beta = np.linalg.lstsq(design * sw[:, None], d * sw, rcond=None)[0]
        rss.append(float(np.sum(w * (d - design @ beta) ** 2)))
    extra, df1 = trend.shape[1] - constant.shape[1], len(d) - trend.shape[1]
    if df1 <= 0 or rss[1] <= 0:
        return 0.0 if rss[0] > rss[1] else 1.0
    f = ((rss[0] - rss[1]) / extra) / (rss[1] / df1)
    from scipy.stats import f as fisher  # heavy: paired comparisons only

    return float(fisher.sf(f, extra, df1))
