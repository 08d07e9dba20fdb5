"""Fitting PMNF models: single-parameter search, multi-parameter combinations, cross-validated selection.

The method (measured against Extra-P 4.2.5 by bench/modeler_vs_extrap.py):

1. Per parameter, the mean run time per value of that parameter (the other parameters averaged out)
   is fitted with every hypothesis c_0 + c_1 x^i log2(x)^j of the search space at once (closed-form
   weighted simple regression) and scored by leave-one-out cross-validation. The best few terms per
   parameter, and "no dependence", go on to step 2.
2. Every combination of those terms under every additive/multiplicative structure (a, b, a*b,
   a*b + a, a + b, ... for three parameters likewise) is fitted to all points by weighted least squares,
   vectorised over candidates, and scored by the leave-one-out error computed in closed form from the
   hat matrix. The best score wins; within a hair of it the simpler model.

Weights are 1/y^2: the residuals are relative errors, which suits run times whose noise is
multiplicative and whose values span orders of magnitude.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from perfsweep.modeling.model import Model
from perfsweep.modeling.terms import Factor, Term, exponent_pairs


class ModelingError(ValueError):
    """Input that cannot be modelled (one-line message)."""


class FewValuesWarning(UserWarning):
    """Fewer than 5 distinct values of a parameter (Extra-P's rule of thumb)."""


@dataclass(frozen=True)
class FitOptions:
    negative_exponents: bool = False  # add x^-1/2 .. x^-2 for every parameter
    negative_params: tuple[str, ...] = ()  # ... or only for these (strong scaling in p)
    top_terms: int = 3  # single-parameter terms per parameter carried into the combination step
    max_terms: int = 3  # non-constant terms in a multi-parameter model
    simplicity_tolerance: float = 0.02  # prefer fewer terms when the CV score is within 2 %
    weighting: str = "relative"  # "relative" (1/y^2) or "none" (Extra-P's plain least squares)


def _check(x, y, names) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ModelingError(f"X must be N x q (got shape {x.shape})")
    names = list(names) if names is not None else [f"x{k}" for k in range(x.shape[1])]
    if len(names) != x.shape[1]:
        raise ModelingError(f"{len(names)} parameter names for {x.shape[1]} columns of X")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != x.shape[0]:
        raise ModelingError(f"Y must have one row per point of X ({x.shape[0]}), got shape {y.shape}")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ModelingError("parameter values must be finite and positive (log2 and powers of them are taken)")
    if not np.all(np.isfinite(y)):
        raise ModelingError("measurements must be finite (NaN or inf found)")
    if np.any(y <= 0):
        raise ModelingError(f"measurements must be positive (got {y[y <= 0][0]:g})")
    for k, name in enumerate(names):
        distinct = len(np.unique(x[:, k]))
        if distinct < 3:
            raise ModelingError(f"parameter {name} has {distinct} distinct values; at least 3 are needed")
        if distinct < 5:
            warnings.warn(f"parameter {name} has only {distinct} distinct values; 5 or more are advised",
                          FewValuesWarning, stacklevel=3)
    return x, y.mean(axis=1), y, names


@lru_cache(maxsize=8)
def _pairs(negative: bool) -> tuple:
    return tuple(exponent_pairs(negative))


def _single_scores(u: np.ndarray, ybar: np.ndarray, pairs, weighted: bool) -> np.ndarray:
    """LOO score of c0 + c1 * term(u) for every (i, j) pair at once (weighted simple regression)."""
    t = np.stack([(u ** float(i) if i else np.ones_like(u)) * (np.log2(u) ** j if j else 1.0) for i, j in pairs])
    w = 1.0 / ybar ** 2 if weighted else np.ones_like(ybar)
    sw = w.sum()
    tm = (t * w).sum(axis=1, keepdims=True) / sw
    ym = (ybar * w).sum() / sw
    dt = t - tm
    stt = (w * dt * dt).sum(axis=1)
    ok = stt > 1e-300 * (1 + np.abs(tm[:, 0]))
    slope = np.where(ok, (w * dt * (ybar - ym)).sum(axis=1) / np.where(ok, stt, 1), 0.0)
    pred = ym + slope[:, None] * dt
    h = w / sw + w * dt * dt / np.where(ok, stt, 1)[:, None]
    loo = (ybar - pred) / np.clip(1.0 - h, 1e-9, None)
    score = np.mean((loo / ybar) ** 2, axis=1) if weighted else np.mean(loo ** 2, axis=1)
    return np.where(ok, score, np.inf)


@lru_cache(maxsize=16)
def _structures(q: int, max_terms: int) -> tuple[tuple[frozenset, ...], ...]:
    """Sets of parameter subsets (each a product term) covering all q parameters."""
    subsets = [frozenset(c) for r in range(1, q + 1) for c in itertools.combinations(range(q), r)]
    out = []
    for r in range(1, max_terms + 1):
        for combo in itertools.combinations(subsets, r):
            if frozenset().union(*combo) == frozenset(range(q)):
                out.append(combo)
    return tuple(out)


def fit_model(x, y, param_names=None, *, options: FitOptions | None = None) -> Model:
    """Fit a PMNF model to points ``x`` (N x q) and measurements ``y`` (N, or N x repetitions)."""
    opts = options or FitOptions()
    x, ybar, yall, names = _check(x, y, param_names)
    n, q = x.shape
    weighted = opts.weighting == "relative"
    w = 1.0 / ybar ** 2 if weighted else np.ones(n)

    # step 1: per parameter, the best few single-parameter terms on the marginal means
    choices: list[list[Factor | None]] = []
    for k in range(q):
        pairs = _pairs(opts.negative_exponents or names[k] in opts.negative_params)
        u, inv = np.unique(x[:, k], return_inverse=True)
        marg = np.bincount(inv, weights=ybar) / np.bincount(inv)
        scores = _single_scores(u, marg, pairs, weighted)
        order = np.argsort(scores, kind="stable")[: opts.top_terms]
        choices.append([Factor(k, pairs[i][0], pairs[i][1]) for i in order if np.isfinite(scores[i])])

    # step 2: combinations of those terms under every structure, fitted on all points
    values = [np.stack([f.values(x) for f in ch]) if ch else np.empty((0, n)) for ch in choices]
    batches: dict[int, list[tuple[np.ndarray, list]]] = {}  # size -> [(design matrices, candidate keys)]
    batches.setdefault(0, []).append((np.ones((1, n, 1)), [((), (), {}, ())]))
    for present in (s for r in range(1, q + 1) for s in itertools.combinations(range(q), r)):
        if any(not choices[k] for k in present):
            continue
        for structure in _structures(len(present), min(opts.max_terms, 2 ** len(present) - 1)):
            # slots: one factor choice per (term, parameter); with up to two parameters a parameter may
            # take different exponents in different terms (n/p + p), with three they share one choice
            slots = [(t, pos) for t, subset in enumerate(structure) for pos in sorted(subset)]
            if len(present) > 2:
                slot_of = {slot: slot[1] for slot in slots}
                picks = np.array(list(itertools.product(*(range(len(choices[k])) for k in present))))
            else:
                slot_of = {slot: i for i, slot in enumerate(slots)}
                picks = np.array(list(itertools.product(*(range(len(choices[present[pos]])) for _, pos in slots))))
            a = np.ones((len(picks), n, len(structure) + 1))
            for (t, pos) in slots:
                a[:, :, t + 1] *= values[present[pos]][picks[:, slot_of[(t, pos)]]]
            keys = [(present, structure, slot_of, tuple(pk)) for pk in picks]
            batches.setdefault(len(structure), []).append((a, keys))

    best = None
    for size in sorted(batches):
        if size + 1 >= n:
            continue
        a = np.concatenate([b[0] for b in batches[size]])
        keys = [k for b in batches[size] for k in b[1]]
        beta, score = _batched_fit(a, ybar, w, weighted)
        i = int(np.argmin(score))
        # larger models must beat the best smaller one by more than the tolerance
        if best is None or score[i] < best[0] * (1 - opts.simplicity_tolerance):
            best = (float(score[i]), keys[i], beta[i])
    cv, (present, structure, slot_of, pick), beta = best
    terms = [Term(tuple(choices[present[pos]][pick[slot_of[(t, pos)]]] for pos in sorted(subset)))
             for t, subset in enumerate(structure)]
    model = Model(names, terms, beta, points=x, values=ybar, cv_score=cv)
    _statistics(model, x, ybar)
    return model


def _batched_fit(a: np.ndarray, y: np.ndarray, w: np.ndarray, weighted: bool):
    """Weighted least squares for C design matrices (C, N, K) at once: coefficients and LOO score."""
    scale = np.abs(a).max(axis=1, keepdims=True)  # column scaling keeps the normal equations conditioned
    scale[scale == 0] = 1.0
    a = a / scale
    aw = a * w[None, :, None]
    g = np.matmul(aw.transpose(0, 2, 1), a)
    k = a.shape[2]
    g += np.eye(k)[None] * (1e-14 * np.trace(g, axis1=1, axis2=2))[:, None, None]
    ginv = np.linalg.inv(g)
    beta = np.matmul(ginv, np.matmul(aw.transpose(0, 2, 1), y)[:, :, None])[:, :, 0]
    pred = np.matmul(a, beta[:, :, None])[:, :, 0]
    h = np.sum(np.matmul(aw, ginv) * a, axis=2)
    loo = (y[None] - pred) / np.clip(1.0 - h, 1e-9, None)
    score = np.mean((loo / y) ** 2, axis=1) if weighted else np.mean(loo ** 2, axis=1)
    return beta / scale[:, 0, :], np.where(np.isfinite(score), score, np.inf)


def _statistics(model: Model, x: np.ndarray, y: np.ndarray) -> None:
    pred = model.predict(x)
    resid = y - pred
    rss = float(np.sum(resid ** 2))
    tss = float(np.sum((y - y.mean()) ** 2))
    n, k = len(y), len(model.terms)
    r2 = 1.0 - rss / tss if tss > 0 else 1.0
    model.rss = rss
    model.r2 = r2
    model.adj_r2 = 1.0 - (1.0 - r2) * (n - 1) / (n - k - 1) if n - k - 1 > 0 else float("nan")
    model.smape = float(np.mean(2 * np.abs(resid) / (np.abs(pred) + np.abs(y))) * 100)
