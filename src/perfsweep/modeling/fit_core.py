"""What every step of the modeler shares: a batch's data and the least squares of candidate models.

A Fit holds M measurement sets (their means, M x N, and noise) on the same N x q points, their weights,
and the values of every hypothesis x^i log2(x)^j of each parameter. Candidate models of all sets are
Entries in one padded layout (a slot per factor: its parameter, pair and term), so that a step over
all of them costs the same few array operations whatever their structures; Fit.columns and
Fit.moments give their design columns and normal equations, solve (cholesky) their coefficients and
weighted RSS, Fit.score the selection criterion, Fit.fits_noise whether a model fits within the noise
the repetitions show. The search (fit_search), the chosen models' statistics (fit_stats) and the
exact-fit shortcut (fit_exact) build on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsweep.modeling.fit_input import FitOptions
from perfsweep.modeling.terms import EXACT, Factor

CHUNK = 256  # call paths fitted at once (bounds the memory of the candidate arrays)


def term_values(col: np.ndarray, pairs) -> np.ndarray:
    """x^i log2(x)^j of every pair at the values ``col``: (P, len(col))."""
    return np.stack([Factor(0, i, j).values(col[:, None]) for i, j in pairs])


def cholesky(entry, rhs, k: int, positive):
    """Solve small K x K symmetric positive definite systems elementwise over arrays (an unrolled
    Cholesky beats LAPACK's per-matrix overhead on many tiny systems). ``entry(i, j)`` gives the lower-triangle
    entries of unit-diagonal (Jacobi-scaled) matrices, ``rhs(i)`` the right-hand sides. Returns the
    coefficients, b'beta (= |z|^2, so RSS = y'Wy - b'beta) and whether the system is usable (not
    degenerate, and the term coefficients positive if ``positive`` is True, or those it marks if it is
    a boolean array (..., K))."""
    low: dict[tuple[int, int], np.ndarray] = {}
    ok = None
    for i in range(k):
        for j in range(i + 1):
            acc = entry(i, j)
            for m in range(j):
                acc = acc - low[i, m] * low[j, m]
            if i == j:
                good = acc > 1e-10  # columns independent within 1e-5 (unit diagonal)
                ok = good if ok is None else ok & good
                low[i, i] = np.sqrt(np.where(good, acc, 1.0))
            else:
                low[i, j] = acc / low[j, j]
    z = []
    for i in range(k):
        acc = rhs(i)
        for m in range(i):
            acc = acc - low[i, m] * z[m]
        z.append(acc / low[i, i])
    fitted = sum(v * v for v in z)
    beta = [None] * k
    for i in reversed(range(k)):
        acc = z[i]
        for m in range(i + 1, k):
            acc = acc - low[m, i] * beta[m]
        beta[i] = acc / low[i, i]
        if isinstance(positive, np.ndarray):  # which coefficients must be positive (..., K)
            ok = ok & (~positive[..., i] | (beta[i] > 0))
        elif positive and i > 0:
            ok = ok & (beta[i] > 0)
    return np.stack(beta, axis=-1), fitted, ok


def solve(g: np.ndarray, b: np.ndarray, ywy: np.ndarray, positive):
    """Weighted least squares from normal equations g beta = b, (..., K, K) and (..., K), with Jacobi
    scaling. Returns the coefficients, the weighted RSS and whether the fit is usable."""
    d = np.sqrt(np.einsum("...kk->...k", g))
    d = np.where(d > 0, d, 1.0)
    gs = g / (d[..., :, None] * d[..., None, :])
    bs = b / d
    beta_s, fitted, ok = cholesky(lambda i, j: gs[..., i, j] + (1e-13 if i == j else 0.0), lambda i: bs[..., i],
                                  g.shape[-1], positive)
    return beta_s / d, np.maximum(ywy - fitted, 0.0), ok


@dataclass
class Entries:
    """Candidate models of all call paths in one padded layout, so that a refinement step over all
    of them costs the same few array operations whatever their structures: slot l of entry e is a
    factor of parameter ``param[e, l]`` with pair index ``sel[e, l]`` in term ``term[e, l]`` (-1:
    unused); ``row[e]`` is the call path, ``score[e]`` the criterion."""

    row: np.ndarray
    term: np.ndarray
    param: np.ndarray
    sel: np.ndarray
    score: np.ndarray

    def unique(self) -> Entries:
        """Without repeated candidates (the same model of the same call path)."""
        key = np.column_stack([self.row, self.term, self.param, np.where(self.term >= 0, self.sel, 0)])
        return self.take(np.sort(np.unique(key, axis=0, return_index=True)[1]))

    def take(self, index) -> Entries:
        return Entries(self.row[index], self.term[index], self.param[index], self.sel[index], self.score[index])

    @staticmethod
    def concat(parts: list[Entries]) -> Entries:
        width = max(p.sel.shape[1] for p in parts)

        def pad(a, fill):
            return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill)

        return Entries(np.concatenate([p.row for p in parts]), np.concatenate([pad(p.term, -1) for p in parts]),
                       np.concatenate([pad(p.param, -1) for p in parts]), np.concatenate([pad(p.sel, 0) for p in parts]),
                       np.concatenate([p.score for p in parts]))


class Fit:
    """M measurement sets (M x N means) on the same N x q points: the data, weights and term values
    of the fit, and the least squares of candidate models (Entries) on them."""

    def __init__(self, x, ybar, noise, names, pairs, opts: FitOptions):
        self.x, self.y, self.noise, self.names, self.pairs, self.opts = x, ybar, noise, names, pairs, opts
        self.n, self.q = x.shape
        self.m = len(ybar)
        self.w = 1.0 / ybar ** 2 if opts.weighting == "relative" else np.ones_like(ybar)
        self.ywy = np.sum(self.w * ybar ** 2, axis=1)
        self.values = [term_values(x[:, k], pairs[k]) for k in range(self.q)]  # (P_k, N) per parameter
        self.pen = opts.penalty * np.log(self.n)

    def score(self, rss: np.ndarray, k: int, ywy: np.ndarray) -> np.ndarray:
        """The selection criterion; ``ywy`` (broadcast against ``rss``) sets the exact-fit floor."""
        return self.n * np.log(np.maximum(rss, EXACT * ywy) / self.n) + self.pen * k

    def columns(self, en: Entries):
        """Slot values (E, L, N), design columns (E, K, N) (column 0 the constant, unused ones 0) and
        which columns are used (E, K)."""
        e, width = en.sel.shape
        sv = np.ones((e, width, self.n))
        for k in range(self.q):
            m = en.param == k
            if m.any():
                sv[m] = self.values[k][en.sel[m]]
        cols = np.ones((e, int(en.term.max(initial=-1)) + 2, self.n))
        used = np.zeros(cols.shape[:2], bool)
        used[:, 0] = True
        for slot in range(width):
            t = en.term[:, slot]
            u = np.flatnonzero(t >= 0)
            cols[u, t[u] + 1] *= sv[u, slot]
            used[u, t[u] + 1] = True
        cols[~used] = 0.0
        return sv, cols, used

    def moments(self, en: Entries, cols, used):
        cw = cols * self.w[en.row][:, None, :]
        g = cw @ cols.transpose(0, 2, 1)
        b = (cw @ self.y[en.row][:, :, None])[:, :, 0]
        e, c = np.nonzero(~used)
        g[e, c, c] = 1.0  # an unused column: coefficient 0
        return g, b

    def positive(self, used):
        return (used & (np.arange(used.shape[1]) > 0)) if self.opts.positive else np.zeros_like(used)

    def entry_scores(self, en: Entries) -> np.ndarray:
        """The criterion of every entry on this fit's data (inf where a coefficient that must be
        positive is not, or where there are not more points than coefficients)."""
        _, cols, used = self.columns(en)
        g, b = self.moments(en, cols, used)
        _, rss, ok = solve(g, b, self.ywy[en.row], self.positive(used))
        k = used.sum(axis=1)
        return np.where(ok & (k < self.n), self.score(rss, k, self.ywy[en.row]), np.inf)

    @staticmethod
    def best_per_row(en: Entries, count: int = 1) -> Entries:
        """The ``count`` best entries of every call path."""
        order = np.lexsort((en.score, en.row))
        rows = en.row[order]
        start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        rank = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
        return en.take(order[rank < count])

    def fits_noise(self, en: Entries) -> np.ndarray:
        """Per call path (one entry each): whether the weighted RSS is within the 99 % chi-square
        bound of the noise the repetitions show (without repetitions: only an exact fit)."""
        _, cols, used = self.columns(en)
        g, b = self.moments(en, cols, used)
        _, rss, _ = solve(g, b, self.ywy[en.row], False)
        return self.within_noise(en, rss, used)

    def within_noise(self, en: Entries, rss: np.ndarray, used: np.ndarray) -> np.ndarray:
        """:meth:`fits_noise` of entries whose weighted RSS (E,) and used columns (E, K) are known."""
        from scipy.stats import chi2  # here: scipy.stats takes seconds to import (a perfsweep command's start)

        dof = np.maximum(self.n - used.sum(axis=1), 1)
        out = np.zeros(self.m, bool)
        out[en.row] = rss <= np.fmax(self.noise[en.row] * chi2.ppf(0.99, dof), EXACT * self.ywy[en.row])
        return out
