"""The statistics of the chosen models, and the single-term models that can replace them.

finish gives the models the search chose (Entries, one per set) their coefficients and statistics:
exact residuals, R^2, adjusted R^2, SMAPE, the leave-one-out score; terms that change no prediction
beyond the fitting floor are dropped. Then the plausibility guard (step 5 of the method in
perfsweep.modeling.fit): a model that neither fits within the noise nor explains as much of the
variance as the best single-term model (of one or two factors, with 3 parameters also three) is
replaced by that model; and noise-free data get the exact-fit shortcut (fit_exact.resolve_exact).
"""

from __future__ import annotations

import itertools

import numpy as np

from perfsweep.modeling.fit_core import Entries, Fit, solve, term_values
from perfsweep.modeling.fit_exact import resolve_exact
from perfsweep.modeling.model import Model, fill_statistics, statistics
from perfsweep.modeling.terms import Factor, Term

_FLOOR = 1e-9  # a term changing no value by more than this fraction (unweighted: of the largest) is not a term
_R2_SLACK = 0.01  # a model within the noise may explain this much less variance than a single term


def finish(fit: Fit, en: Entries, out: list) -> None:
    """Coefficients and statistics of the chosen models (exact residuals, leave-one-out)."""
    _, a, used = fit.columns(en)  # (M, K, N)
    g, b = fit.moments(en, a, used)
    beta, rss_w, _ = solve(g, b, fit.ywy[en.row], np.zeros_like(used))
    y, w = fit.y[en.row], fit.w[en.row]
    pred = np.einsum("mk,mkn->mn", beta, a)
    ginv = np.linalg.pinv(g)  # leave-one-out residuals from the hat matrix diagonal
    h = np.einsum("mkn,mkl,mln->mn", a * w[:, None, :], ginv, a)
    loo = (y - pred) / np.clip(1.0 - h, 1e-9, None)
    cv = np.mean(loo * loo * w, axis=1) if fit.opts.weighting == "relative" else np.mean(loo * loo, axis=1)
    # terms (the constant too) that change no prediction by more than the fitting floor are
    # rounding residue of an exact fit (3.7e-12 + 2 * x^(3/2)): dropped
    size = np.abs(y) if fit.opts.weighting == "relative" else np.max(np.abs(y), axis=1, keepdims=True)  # as weighted
    keep = np.max(np.abs(beta[:, :, None] * a) / size[:, None, :], axis=2) > _FLOOR
    keep &= np.arange(a.shape[1]) <= en.term.max(axis=1, initial=-1)[:, None] + 1
    keep[:, 0] |= ~keep[:, 1:].any(axis=1)
    coef = np.where(keep, beta, 0.0)
    # the statistics of all models at once, from their predictions as Model.predict computes them
    # (the constant, then each term's coefficient times its factors' product in parameter order)
    fitted = np.repeat(coef[:, :1], fit.n, axis=1)
    for t in range(a.shape[1] - 1):
        values = np.ones((len(en.row), fit.n))
        for k in range(fit.q):
            e, slot = np.nonzero((en.term == t) & (en.param == k))
            values[e] *= fit.values[k][en.sel[e, slot]]
        fitted += coef[:, t + 1, None] * values
    rss, r2, adj_r2, smape = statistics(y, fitted, keep[:, 1:].sum(axis=1))
    columns = keep.copy()
    columns[:, 0] = True
    factors = [[Factor(k, *pair) for pair in fit.pairs[k]] for k in range(fit.q)]
    term, param, sel, kept = en.term.tolist(), en.param.tolist(), en.sel.tolist(), keep.tolist()
    for i, r in enumerate(en.row.tolist()):
        parts: dict[int, list[tuple[int, int]]] = {}
        for t, k, p in zip(term[i], param[i], sel[i]):
            if t >= 0 and kept[i][t + 1]:
                parts.setdefault(t, []).append((k, p))
        # a term's parameters are distinct: in parameter order its factors are sorted
        terms = [Term(tuple(factors[k][p] for k, p in sorted(parts[t]))) for t in sorted(parts)]
        out[r] = Model(fit.names, terms, coef[i, columns[i]], points=fit.x, values=fit.y[r], cv_score=float(cv[i]),
                       rss=float(rss[i]), r2=float(r2[i]), adj_r2=float(adj_r2[i]), smape=float(smape[i]))
    plausible(fit, en, out, fit.within_noise(en, rss_w, used), adj_r2)
    resolve_exact(fit, out)


def plausible(fit: Fit, en: Entries, out: list, fits: np.ndarray, adj_model: np.ndarray) -> None:
    """Where a chosen model neither fits within the noise the repetitions show nor explains as
    much of the variance (adjusted R^2) as the best model with a single term (of one or two
    factors; with 3 parameters also of three), least squares, coefficient positive, that model
    replaces it: relative weights can otherwise prefer a constant under data that rise from 478 to
    6448 with large scatter. ``fits``: :meth:`Fit.fits_noise` of the entries, ``adj_model``: their
    models' adjusted R^2 (E,)."""
    if fit.n <= 3:
        return
    y = fit.y[en.row]
    yc = y - y.mean(axis=1, keepdims=True)
    syy = np.sum(yc * yc, axis=1)
    if not np.any(syy > 0):
        return
    bank, blocks = _single_terms(fit)
    tc = bank - bank.mean(axis=1, keepdims=True)
    stt, sty = np.sum(tc * tc, axis=1), yc @ tc.T
    usable = stt > 1e-12 * np.sum(bank * bank, axis=1)
    # R^2 of every single term only where one could replace the model: where the model neither
    # fits within the noise at adj. R^2 >= 0.99 nor has adj. R^2 1 (0-16 % of the models of
    # bench/modeler_vs_extrap.py), or else a term's R^2 can round above 1 (it fits exactly:
    # |sty| / sqrt(stt) within rounding of sqrt(syy), sty^2 > stt syy in floating point)
    reach = np.abs(sty)  # (in place: a second (M, T) temporary cost 4x the time)
    reach *= np.where(usable, 1.0 / np.sqrt(np.where(usable, stt, 1.0)), 0.0)
    reach = reach.max(axis=1)
    fit_well = fits[en.row] & (adj_model >= 1 - _R2_SLACK) | (adj_model >= 1)
    need = np.flatnonzero((syy > 0) & (~fit_well | (reach >= np.sqrt(syy) * (1 - 1e-12))))
    if not len(need):
        return
    sty = sty[need]  # (the product of all rows: BLAS gives a single row other last bits)
    ok = usable[None, :] & ((sty > 0) if fit.opts.positive else True)
    r2 = np.where(ok, sty ** 2 / np.where(ok, stt[None, :] * np.maximum(syy[need], 1e-300)[:, None], 1.0), -np.inf)
    best = np.argmax(r2, axis=1)
    r2_best = np.maximum(r2[np.arange(len(best)), best], 0.0)  # at worst the constant (the mean)
    three: dict[int, Term] = {}  # where a product of all three parameters is the best single term
    if fit.q == 3:  # products of all three parameters too, where one could replace the model
        r2_three, pick = np.full(len(need), -np.inf), np.zeros((len(need), 3), int)
        three_need = np.flatnonzero(~fit_well[need])
        for part in np.array_split(three_need, max(1, len(three_need) // 32)) if len(three_need) else []:
            r2_three[part], pick[part] = _best_product_of_three(fit, yc[need[part]], syy[need[part]])
        for j in np.flatnonzero(r2_three > r2_best):
            r2_best[j] = r2_three[j]
            three[j] = Term(tuple(Factor(k, *fit.pairs[k][pick[j, k]]) for k in range(3)))
    adj = 1 - (1 - r2_best) * (fit.n - 1) / (fit.n - 2)
    for j in np.flatnonzero(adj_model[need] < adj - np.where(fits[en.row[need]], _R2_SLACK, 0.0)):
        i, r = need[j], en.row[need[j]]
        term = three[j] if j in three else _single_term(fit, int(best[j]), blocks)
        tv = term.values(fit.x) if r2_best[j] > 0 else None
        if tv is not None:
            slope = np.sum((tv - tv.mean()) * yc[i]) / np.sum((tv - tv.mean()) ** 2)
            model = Model(fit.names, [term], np.array([y[i].mean() - slope * tv.mean(), slope]),
                          points=fit.x, values=fit.y[r])
        else:
            model = Model(fit.names, [], np.array([y[i].mean()]), points=fit.x, values=fit.y[r])
        # leave-one-out score as finish() gives the others (weighted as the options weight): the
        # hat matrix diagonal of the least-squares line in tv (of the mean alone: 1/N)
        h = np.full(fit.n, 1.0 / fit.n)
        if tv is not None:
            h = h + (tv - tv.mean()) ** 2 / np.sum((tv - tv.mean()) ** 2)
        loo = (y[i] - model.predict(fit.x)) / np.clip(1.0 - h, 1e-9, None)
        model.cv_score = float(np.mean(loo * loo * (fit.w[r] if fit.opts.weighting == "relative" else 1.0)))
        fill_statistics(model, y[i], model.predict(fit.x))
        out[r] = model


def _single_terms(fit: Fit) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Every term of one or two factors (a pair of one parameter, or the product of pairs of two):
    their values (T, N) and the parameters of each block of them (one parameter: its pairs; two:
    every product of their pairs, the second parameter's pair varying fastest); :func:`_single_term`
    gives a term's factors."""
    values, blocks = [], []
    for k in range(fit.q):
        values.append(fit.values[k])
        blocks.append((k,))
    for k, l in itertools.combinations(range(fit.q), 2):
        values.append((fit.values[k][:, None, :] * fit.values[l][None, :, :]).reshape(-1, fit.n))
        blocks.append((k, l))
    return np.concatenate(values), blocks


def _single_term(fit: Fit, index: int, blocks: list[tuple[int, ...]]) -> Term:
    """Term ``index`` of :func:`_single_terms` (built only for the terms that are used)."""
    for params in blocks:
        shape = [len(fit.pairs[k]) for k in params]
        if index < np.prod(shape):
            picks = np.unravel_index(index, shape)
            return Term(tuple(sorted(Factor(k, *fit.pairs[k][int(p)]) for k, p in zip(params, picks))))
        index -= int(np.prod(shape))
    raise IndexError(index)


def _best_product_of_three(fit: Fit, yc: np.ndarray, syy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R^2 of the best c0 + c1 a b c (one pair of each of the 3 parameters, c1 > 0 if positive)
    per row of the centred values ``yc`` (E, N), and its pair per parameter (E, 3). On a full
    grid the 74,088 products' moments separate into per-parameter sums (cheap); elsewhere they
    are computed over the points."""
    a, b, c = fit.values
    u = [np.unique(fit.x[:, k], return_inverse=True) for k in range(3)]
    full = len(np.unique(fit.x, axis=0)) == fit.n == np.prod([len(v) for v, _ in u])
    e = len(yc)
    if full:
        grid = np.zeros((e, *(len(v) for v, _ in u)))
        grid[:, u[0][1].ravel(), u[1][1].ravel(), u[2][1].ravel()] = yc
        av, bv, cv = (term_values(v, fit.pairs[k]) for k, (v, _) in enumerate(u))
        sty = np.einsum("muvw,iu->mivw", grid, av)
        sty = np.einsum("mivw,jv->mijw", sty, bv)
        sty = np.einsum("mijw,kw->mijk", sty, cv).reshape(e, -1)
        total = np.einsum("i,j,k->ijk", *((t * t).sum(axis=1) for t in (av, bv, cv))).ravel()
        mean = np.einsum("i,j,k->ijk", *(t.mean(axis=1) for t in (av, bv, cv))).ravel()
        stt = total - fit.n * mean ** 2
    else:
        bank = (a[:, None, None, :] * b[None, :, None, :] * c[None, None, :, :]).reshape(-1, fit.n)
        total = np.sum(bank * bank, axis=1)
        bank = bank - bank.mean(axis=1, keepdims=True)
        stt, sty = np.sum(bank * bank, axis=1), yc @ bank.T
    ok = (stt > 1e-12 * total)[None, :] & ((sty > 0) if fit.opts.positive else True)
    r2 = np.where(ok, sty ** 2 / np.where(ok, stt[None, :] * np.maximum(syy, 1e-300)[:, None], 1.0), -np.inf)
    best = np.argmax(r2, axis=1)
    return r2[np.arange(e), best], np.column_stack(np.unravel_index(best, (len(a), len(b), len(c))))
