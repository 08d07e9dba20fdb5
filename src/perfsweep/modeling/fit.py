"""Fitting PMNF models: candidate terms per parameter, sum/product structures, exponent refinement.

    model = fit_model(X, Y, ["n", "m"])                 # Y: N values or N x repetitions
    models = fit_models(X, [Y1, Y2, ...], ["n", "m"])   # many call paths / metrics on the same points

The method (every choice measured against Extra-P 4.2.5 with bench/modeler_vs_extrap.py):

1. Per parameter, the mean measurement per value of that parameter (the others averaged out) is fitted
   with every hypothesis c_0 + c_1 x^i log2(x)^j of the search space at once (closed-form weighted
   simple regression). The ``candidates`` best by residual sum of squares go on.
2. Every structure (structures.py: a*b, a+b, a*b+a, ...; Extra-P's combinations and more) of every
   combination of those terms, and every subset of parameters (the others without influence), is
   fitted to all points by weighted least squares. All candidates' normal equations come out of one
   Gram matrix of the distinct columns they use, so a candidate costs a K x K solve, not a pass over
   the points.
3. For the chosen structure, each parameter's exponents are searched again over the whole search space
   against all points (coordinate descent), which finds terms that the marginal means of step 1 ranked
   too low.

Selection: N log(RSS_w / N) + penalty * ln(N) * K (the Gaussian log-likelihood with unknown noise and
a penalty per coefficient, twice BIC's), and every term coefficient must be positive: each term of a
run-time model is a cost. Weights are 1/y^2 (relative errors), which suits run times whose noise is
multiplicative and whose values span orders of magnitude. Each of these beat the alternative in the
benchmark (leave-one-out selection, Extra-P's fixed structures, free-sign coefficients, a noise level
taken from the repetitions); the leave-one-out score is still reported for the chosen model.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from perfsweep.modeling.model import Model
from perfsweep.modeling.structures import Structure, structures
from perfsweep.modeling.terms import Factor, Term, exponent_pairs

# RSS below this fraction of sum(w y^2) counts as an exact fit: the normal equations cannot resolve less
_EXACT = 1e-13
_CHUNK = 256  # call paths fitted at once (bounds the memory of the candidate arrays)


class ModelingError(ValueError):
    """Input that cannot be modelled (one-line message)."""


class FewValuesWarning(UserWarning):
    """Fewer than 5 distinct values of a parameter (Extra-P's rule of thumb)."""


@dataclass(frozen=True)
class FitOptions:
    negative_exponents: bool = False  # add x^-1/2 .. x^-2 for every parameter
    negative_params: tuple[str, ...] = ()  # ... or only for these (strong scaling in p)
    candidates: int = 3  # single-parameter terms per parameter carried into the combination step (4+: 2)
    extra_terms: int = 2  # lower-order terms beside a product (a*b + a + b); 0 with 4 or more parameters
    penalty: float = 2.0  # per coefficient, times ln(N)
    refine_rounds: int = 3  # coordinate-descent rounds over the exponents of the chosen structure
    positive: bool = True  # term coefficients must be positive
    weighting: str = "relative"  # "relative" (1/y^2) or "none" (Extra-P's plain least squares)


def fit_model(x, y, param_names=None, *, options: FitOptions | None = None) -> Model:
    """Fit a PMNF model to points ``x`` (N x q) and measurements ``y`` (N, or N x repetitions)."""
    return fit_models(x, [y], param_names, options=options)[0]


def fit_models(x, ys: Sequence, param_names=None, *, options: FitOptions | None = None) -> list[Model]:
    """One model per measurement set of ``ys`` (each N, or N x repetitions) on the same points ``x``:
    the call paths and metrics of one experiment, fitted together (like Extra-P's model_all)."""
    opts = options or FitOptions()
    if opts.weighting not in ("relative", "none"):
        raise ModelingError(f"weighting must be 'relative' or 'none', not {opts.weighting!r}")
    x, names = _check_points(x, param_names)
    ybar = np.stack([_check_values(y, len(x)) for y in ys]) if len(ys) else np.empty((0, len(x)))
    pairs = [_pairs(opts.negative_exponents or name in opts.negative_params) for name in names]
    models: list[Model] = []
    for start in range(0, len(ybar), _CHUNK):
        models += _Fit(x, ybar[start:start + _CHUNK], names, pairs, opts).models()
    return models


def _check_points(x, names) -> tuple[np.ndarray, list[str]]:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ModelingError(f"X must be N x q (got shape {x.shape})")
    names = list(names) if names is not None else [f"x{k}" for k in range(x.shape[1])]
    if len(names) != x.shape[1]:
        raise ModelingError(f"{len(names)} parameter names for {x.shape[1]} columns of X")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ModelingError("parameter values must be finite and positive (log2 and powers of them are taken)")
    for k, name in enumerate(names):
        distinct = len(np.unique(x[:, k]))
        if distinct < 3:
            raise ModelingError(f"parameter {name} has {distinct} distinct values; at least 3 are needed")
        if distinct < 5:
            warnings.warn(f"parameter {name} has only {distinct} distinct values; 5 or more are advised",
                          FewValuesWarning, stacklevel=4)
    return x, names


def _check_values(y, n: int) -> np.ndarray:
    """The mean over repetitions of one measurement set, checked."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != n:
        raise ModelingError(f"Y must have one row per point of X ({n}), got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ModelingError("measurements must be finite (NaN or inf found)")
    if np.any(y <= 0):
        raise ModelingError(f"measurements must be positive (got {y[y <= 0][0]:g})")
    return y.mean(axis=1)


@lru_cache(maxsize=8)
def _pairs(negative: bool) -> tuple:
    return tuple(exponent_pairs(negative))


def _term_values(col: np.ndarray, pairs) -> np.ndarray:
    """x^i log2(x)^j of every pair at the values ``col``: (P, len(col))."""
    return np.stack([Factor(0, i, j).values(col[:, None]) for i, j in pairs])


def _cholesky(entry, rhs, k: int, positive: bool):
    """Solve K x K symmetric positive definite systems elementwise over arrays (K <= 5 here, so an
    unrolled Cholesky beats LAPACK's per-matrix overhead). ``entry(i, j)`` gives the lower-triangle
    entries of unit-diagonal (Jacobi-scaled) matrices, ``rhs(i)`` the right-hand sides. Returns the
    coefficients, b'beta (= |z|^2, so RSS = y'Wy - b'beta) and whether the system is usable (not
    degenerate, and term coefficients positive if asked)."""
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
        if positive and i > 0:
            ok = ok & (beta[i] > 0)
    return np.stack(beta, axis=-1), fitted, ok


def _solve(g: np.ndarray, b: np.ndarray, ywy: np.ndarray, positive: bool):
    """Weighted least squares from normal equations g beta = b, (..., K, K) and (..., K), with Jacobi
    scaling. Returns the coefficients, the weighted RSS and whether the fit is usable."""
    d = np.sqrt(np.einsum("...kk->...k", g))
    d = np.where(d > 0, d, 1.0)
    gs = g / (d[..., :, None] * d[..., None, :])
    bs = b / d
    beta_s, fitted, ok = _cholesky(lambda i, j: gs[..., i, j] + (1e-13 if i == j else 0.0), lambda i: bs[..., i],
                                   g.shape[-1], positive)
    return beta_s / d, np.maximum(ywy - fitted, 0.0), ok


@dataclass(frozen=True)
class _Candidates:
    """The stage-2 search space of q parameters with T terms each, independent of the data.

    Column slot 0 is the constant; slot (S, picks) is the product over the parameters in S of their
    picked term. Per number of coefficients K: the slots of each candidate's columns, the pick per
    parameter (-1: absent), and the index of its structure (global parameter indices)."""

    slots: tuple[tuple[tuple[int, ...], int], ...]  # (subset S, offset of its T^|S| slots)
    bank_size: int
    groups: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]  # (columns C x K, picks C x q, structure C)
    structures: tuple[Structure, ...]


@lru_cache(maxsize=16)
def _candidates(q: int, t: int, extra_terms: int) -> _Candidates:
    subsets = [s for r in range(1, q + 1) for s in itertools.combinations(range(q), r)]
    offset, slots = 1, {}
    for s in subsets:
        slots[s] = offset
        offset += t ** len(s)
    all_structures: list[Structure] = [()]
    by_k: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {1: [(np.zeros((1, 1), int),
                                                                              np.full((1, q), -1), np.zeros(1, int))]}
    for present in subsets:
        picks = np.full((t ** len(present), q), -1)
        picks[:, list(present)] = np.array(list(itertools.product(range(t), repeat=len(present))))
        for local in structures(len(present), extra_terms):
            st = tuple(tuple(present[i] for i in term) for term in local)
            all_structures.append(st)
            cols = [np.zeros(len(picks), int)]
            for term in st:  # slot of the term: its picks as the digits of a base-t number
                cols.append(slots[term] + picks[:, list(term)] @ (t ** np.arange(len(term) - 1, -1, -1)))
            by_k.setdefault(len(cols), []).append((np.stack(cols, axis=1), picks,
                                                   np.full(len(picks), len(all_structures) - 1)))
    groups = tuple(tuple(np.concatenate(parts) for parts in zip(*v)) for _, v in sorted(by_k.items()))
    return _Candidates(tuple(slots.items()), offset, groups, tuple(all_structures))


class _Fit:
    """Fits M measurement sets (M x N means) on the same N x q points."""

    def __init__(self, x, ybar, names, pairs, opts: FitOptions):
        self.x, self.y, self.names, self.pairs, self.opts = x, ybar, names, pairs, opts
        self.n, self.q = x.shape
        self.m = len(ybar)
        self.w = 1.0 / ybar ** 2 if opts.weighting == "relative" else np.ones_like(ybar)
        self.ywy = np.sum(self.w * ybar ** 2, axis=1)
        self.values = [_term_values(x[:, k], pairs[k]) for k in range(self.q)]  # (P_k, N) per parameter
        self.t = opts.candidates if self.q <= 4 else min(opts.candidates, 2)
        self.extra = opts.extra_terms if self.q <= 3 else 0
        self.pen = opts.penalty * np.log(self.n)

    def score(self, rss: np.ndarray, k: int, ywy: np.ndarray) -> np.ndarray:
        """The selection criterion; ``ywy`` (broadcast against ``rss``) sets the exact-fit floor."""
        return self.n * np.log(np.maximum(rss, _EXACT * ywy) / self.n) + self.pen * k

    # step 1 -------------------------------------------------------------------------------------
    def single_parameter_choices(self) -> tuple[np.ndarray, np.ndarray]:
        """Per model and parameter the T best pair indices (M, q, T) and whether each is usable."""
        choice = np.zeros((self.m, self.q, self.t), int)
        usable = np.zeros((self.m, self.q, self.t), bool)
        for k in range(self.q):
            u, inv = np.unique(self.x[:, k], return_inverse=True)
            onehot = np.zeros((self.n, len(u)))
            onehot[np.arange(self.n), inv] = 1.0
            marg = (self.y @ onehot) / onehot.sum(axis=0)  # (M, U)
            tv = _term_values(u, self.pairs[k])  # (P, U)
            w = 1.0 / marg ** 2 if self.opts.weighting == "relative" else np.ones_like(marg)
            sw = w.sum(axis=1, keepdims=True)
            dt = tv[None] - ((w @ tv.T) / sw)[:, :, None]  # (M, P, U) centred term values
            dy = marg - (w * marg).sum(axis=1, keepdims=True) / sw  # (M, U)
            stt = np.einsum("mu,mpu->mp", w, dt * dt)
            varies = stt > 1e-12 * np.einsum("mu,pu->mp", w, tv * tv)
            slope = np.einsum("mu,mpu->mp", w * dy, dt) / np.where(varies, stt, 1.0)
            rss = np.einsum("mu,mpu->mp", w, (dy[:, None, :] - slope[:, :, None] * dt) ** 2)
            valid = varies & (slope > 0) if self.opts.positive else varies
            rss = np.where(valid, rss, np.inf)
            order = np.argsort(rss, axis=1, kind="stable")[:, : self.t]
            got = order.shape[1]
            choice[:, k, :got] = order
            usable[:, k, :got] = np.isfinite(np.take_along_axis(rss, order, axis=1))
        return choice, usable

    # step 2 -------------------------------------------------------------------------------------
    def best_combination(self, choice, usable):
        """Per model the best (structure index, pick per parameter) over all candidates."""
        cands = _candidates(self.q, self.t, self.extra)
        picked = [self.values[k][choice[:, k, :]] for k in range(self.q)]  # (M, T, N) per parameter
        bank = np.empty((self.m, cands.bank_size, self.n))
        bank[:, 0] = 1.0
        for subset, offset in cands.slots:
            prod = picked[subset[0]]
            for k in subset[1:]:
                prod = (prod[:, :, None, :] * picked[k][:, None, :, :]).reshape(self.m, -1, self.n)
            bank[:, offset:offset + prod.shape[1]] = prod
        bw = bank * self.w[:, None, :]
        gram = bw @ bank.transpose(0, 2, 1)  # (M, B, B)
        rhs = (bw @ self.y[:, :, None])[:, :, 0]  # (M, B)
        # Jacobi scaling once for the whole bank: every candidate's block is then unit-diagonal
        d = np.sqrt(np.einsum("mbb->mb", gram))
        d = np.where(d > 0, d, 1.0)
        gram /= d[:, :, None] * d[:, None, :]
        gram[:, np.arange(cands.bank_size), np.arange(cands.bank_size)] += 1e-13
        rhs /= d
        rows = np.arange(self.m)
        best = np.full(self.m, np.inf)
        best_sid = np.zeros(self.m, int)
        best_pick = np.full((self.m, self.q), -1)
        for cols, picks, sids in cands.groups:
            k = cols.shape[1]
            if k >= self.n:
                continue
            _, fitted, ok = _cholesky(lambda i, j: gram[:, cols[:, i], cols[:, j]], lambda i: rhs[:, cols[:, i]], k,
                                      self.opts.positive)
            rss = np.maximum(self.ywy[:, None] - fitted, 0.0)
            for j in range(self.q):  # a candidate needs a usable term for every parameter it has
                has = picks[:, j] >= 0
                ok &= ~has | usable[:, j, np.maximum(picks[:, j], 0)]
            score = np.where(ok, self.score(rss, k, self.ywy[:, None]), np.inf)
            i = np.argmin(score, axis=1)
            better = score[rows, i] < best
            best = np.where(better, score[rows, i], best)
            best_sid = np.where(better, sids[i], best_sid)
            best_pick = np.where(better[:, None], picks[i], best_pick)
        pair_index = np.where(best_pick >= 0, np.take_along_axis(choice, np.maximum(best_pick, 0)[:, :, None],
                                                                 axis=2)[:, :, 0], -1)
        return [cands.structures[s] for s in best_sid], pair_index

    # step 3 -------------------------------------------------------------------------------------
    def refine(self, st: Structure, rows: np.ndarray, sel: np.ndarray) -> None:
        """Coordinate descent over each parameter's pair for models ``rows`` sharing structure ``st``;
        ``sel`` (M, q) pair indices is updated in place. The moments of all P alternatives of one
        parameter come from a few matrix products, (P, N) @ (N, models)."""
        w, y = self.w[rows], self.y[rows]
        ywy = self.ywy[rows][:, None]
        present = sorted({k for term in st for k in term})
        for _ in range(self.opts.refine_rounds):
            changed = False
            for k in present:
                cur = sel[rows]
                others = [np.prod([self.values[j][cur[:, j]] for j in term if j != k], axis=0)
                          if any(j != k for j in term) else np.ones_like(y) for term in st]  # (Mg, N) each
                cols = [(np.ones_like(y), False)] + [(o, k in term) for o, term in zip(others, st)]
                kk = len(cols)
                vk = self.values[k]  # (P, N)
                g = np.empty((len(rows), len(vk), kk, kk))
                b = np.empty((len(rows), len(vk), kk))
                for a, (ca, va) in enumerate(cols):
                    b[:, :, a] = (vk @ (w * y * ca).T).T if va else (w * y * ca).sum(1)[:, None]
                    for c in range(a, kk):
                        cc, vc = cols[c]
                        prod = w * ca * cc
                        if va and vc:
                            val = ((vk * vk) @ prod.T).T
                        elif va or vc:
                            val = (vk @ prod.T).T
                        else:
                            val = prod.sum(1)[:, None]
                        g[:, :, a, c] = g[:, :, c, a] = val
                _, rss, ok = _solve(g, b, ywy, self.opts.positive)
                score = np.where(ok, self.score(rss, kk, ywy), np.inf)
                now = score[np.arange(len(rows)), cur[:, k]]
                new = np.argmin(score, axis=1)
                move = score[np.arange(len(rows)), new] < now
                if move.any():
                    sel[rows[move], k] = new[move]
                    changed = True
            if not changed:
                break

    # result -------------------------------------------------------------------------------------
    def models(self) -> list[Model]:
        choice, usable = self.single_parameter_choices()
        chosen, sel = self.best_combination(choice, usable)
        groups: dict[Structure, list[int]] = {}
        for i, st in enumerate(chosen):
            groups.setdefault(st, []).append(i)
        out: list[Model | None] = [None] * self.m
        for st, members in groups.items():
            rows = np.array(members)
            if st and self.q > 1:
                self.refine(st, rows, sel)
            self.finish(st, rows, sel, out)
        return out  # type: ignore[return-value]

    def finish(self, st: Structure, rows: np.ndarray, sel: np.ndarray, out: list) -> None:
        """Coefficients and statistics of the chosen models (exact residuals, leave-one-out)."""
        cols = [np.ones((len(rows), self.n))]
        for term in st:
            cols.append(np.prod([self.values[k][sel[rows, k]] for k in term], axis=0))
        a = np.stack(cols, axis=2)  # (Mg, N, K)
        w, y = self.w[rows], self.y[rows]
        aw = a * w[:, :, None]
        beta, _, _ = _solve(aw.transpose(0, 2, 1) @ a, (aw.transpose(0, 2, 1) @ y[:, :, None])[:, :, 0],
                            self.ywy[rows], False)
        pred = (a @ beta[:, :, None])[:, :, 0]
        # leave-one-out residuals from the hat matrix diagonal
        ginv = np.linalg.pinv(aw.transpose(0, 2, 1) @ a)
        h = np.einsum("mnk,mkl,mnl->mn", aw, ginv, a)
        loo = (y - pred) / np.clip(1.0 - h, 1e-9, None)
        cv = np.mean(loo * loo * w, axis=1) if self.opts.weighting == "relative" else np.mean(loo * loo, axis=1)
        for r, i in enumerate(rows):
            terms = [Term(tuple(Factor(k, *self.pairs[k][sel[i, k]]) for k in term)) for term in st]
            model = Model(self.names, terms, beta[r], points=self.x, values=self.y[i], cv_score=float(cv[r]))
            _statistics(model, y[r], pred[r])
            out[i] = model


def _statistics(model: Model, y: np.ndarray, pred: np.ndarray) -> None:
    resid = y - pred
    rss = float(np.sum(resid ** 2))
    tss = float(np.sum((y - y.mean()) ** 2))
    n, k = len(y), len(model.terms)
    r2 = 1.0 - rss / tss if tss > 0 else 1.0
    model.rss = rss
    model.r2 = r2
    model.adj_r2 = 1.0 - (1.0 - r2) * (n - 1) / (n - k - 1) if n - k - 1 > 0 else float("nan")
    model.smape = float(np.mean(2 * np.abs(resid) / (np.abs(pred) + np.abs(y))) * 100)
