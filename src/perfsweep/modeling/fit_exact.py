"""The exact-fit shortcut: noise-free data that a chosen model fits to within 1e-8 but not exactly.

A term that changes the values by 1e-6 beside one a million times larger is below what the normal
equations of the search resolve. resolve_exact adds, re-chooses and drops single-parameter terms by
orthogonal least squares (SVD: _lstsq, and _lstsq_stack for every candidate of a slot at once) and
replaces the model where that fits exactly.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from perfsweep.modeling.fit_core import Fit
from perfsweep.modeling.model import Model, fill_statistics
from perfsweep.modeling.terms import Factor, Term


def resolve_exact(fit: Fit, out: list) -> None:
    """Noise-free data that a model fits to within 1e-8 but not exactly: a term that changes the
    values by 1e-6 beside one a million times larger (b^(1/4) beside c^3 log2(c) at c = 500) is
    below what the normal equations resolve (and a term of that size may be spurious). There,
    by orthogonal least squares (SVD, 1e-16 accurate), up to one single-parameter term per
    parameter is added while one halves the residual, then terms are dropped while the fit stays
    exact; the result replaces the model only if it fits exactly."""
    singles = single_parameter_terms(fit)
    single_values = np.array([t.values(fit.x) for t in singles])  # (terms, points)
    for r, model in enumerate(out):
        if model is None or fit.noise[r] > 1e-24:  # (identical repetitions: rounding, 1e-32)
            continue
        sw = np.sqrt(fit.w[r])
        b = fit.y[r] * sw
        exact, near = 1e-24 * np.sum(b * b), 1e-8 * np.sum(b * b)
        terms = list(model.terms)
        rss = _lstsq(fit.x, terms, sw, b)[1]
        if not exact < rss < near:
            continue
        # every term's values times sw computed once per set (the same bits as each time)
        single_scaled = single_values * sw
        scaled = {id(t): (t, v) for t, v in zip(singles, single_scaled)}
        scaled.update({id(t): (t, t.values(fit.x) * sw) for t in terms})
        lsq = partial(_lstsq, fit.x, sw=sw, b=b, scaled=scaled)

        def best_in_slot(terms: list[Term], j: int) -> tuple[float, int]:
            """The least RSS with ``terms[j]`` (j == len(terms): a term added) replaced by each single
            term, all at once (:func:`_lstsq_stack`), among those the options allow; and its term."""
            cols = [sw] + [scaled[id(t)][1] for t in terms] + [sw] * (j == len(terms))
            a = np.repeat(np.column_stack(cols)[None], len(singles), axis=0)
            a[:, :, j + 1] = single_scaled  # (column 0: the constant's)
            coef, rss = _lstsq_stack(a, b)
            if fit.opts.positive:
                rss = np.where(np.all(coef[:, 1:] > 0, axis=1), rss, np.inf)
            k = int(np.argmin(rss))
            return float(rss[k]), k

        for _ in range(fit.q):
            if len(terms) + 2 >= fit.n or rss <= exact:
                break
            rss_t, k = best_in_slot(terms, len(terms))
            if rss_t > 0.5 * rss:  # (inf: no term the options allow)
                break
            rss = rss_t
            terms.append(singles[k])
        for _ in range(2):  # the added terms again, each given the others (greedy picks the first
            for j in range(len(model.terms), len(terms)):  # against the residual of all)
                rss_t, k = best_in_slot(terms, j)
                if rss_t < rss:
                    terms, rss = terms[:j] + [singles[k]] + terms[j + 1:], rss_t
            if rss <= exact:
                break
        while len(terms) > 1:
            drops = [(lsq(terms[:j] + terms[j + 1:])[1], j) for j in range(len(terms))]
            rss_j, j = min(drops)
            if rss_j > exact:
                break
            terms.pop(j)
        coef, rss = lsq(terms)
        if rss <= exact and (not fit.opts.positive or np.all(coef[1:] > 0)):
            fitted = Model(fit.names, terms, coef, points=fit.x, values=fit.y[r])
            fill_statistics(fitted, fit.y[r], fitted.predict(fit.x))
            out[r] = fitted


def single_parameter_terms(fit: Fit) -> list[Term]:
    return [Term((Factor(k, *pair),)) for k in range(fit.q) for pair in fit.pairs[k]]


def _lstsq_stack(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What ``np.linalg.lstsq(a[i], b, rcond=None)`` solves for every matrix of a stack ``a`` (B, n, k),
    in one call: the minimum-norm least-squares solution by SVD, singular values below eps * max(n, k)
    times the largest taken as zero. Coefficients (B, k) and RSS (B,)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    keep = s > np.finfo(float).eps * max(a.shape[1:]) * s[:, :1]
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    coef = np.einsum("bji,bj->bi", vt, inv * np.einsum("bnj,n->bj", u, b))
    return coef, np.sum((np.einsum("bnk,bk->bn", a, coef) - b) ** 2, axis=1)


def _lstsq(x: np.ndarray, terms: list[Term], sw: np.ndarray, b: np.ndarray,
           scaled: dict | None = None) -> tuple[np.ndarray, float]:
    """Coefficients (constant first) and weighted RSS of ``terms`` by orthogonal least squares;
    ``scaled``: a cache of the terms' values times ``sw`` (by term object, which it keeps)."""
    scaled = {} if scaled is None else scaled
    for t in terms:
        if id(t) not in scaled:
            scaled[id(t)] = (t, t.values(x) * sw)
    a = np.column_stack([sw] + [scaled[id(t)][1] for t in terms])  # (1 * sw: the constant's column)
    coef, *_ = np.linalg.lstsq(a, b, rcond=None)
    return coef, float(np.sum((a @ coef - b) ** 2))
