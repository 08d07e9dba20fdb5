"""The search over hypotheses: which terms, structures and exponents a measurement set's model has.

Steps 1-4 of the method (perfsweep.modeling.fit): the best single-parameter terms per parameter
(Search.single_parameter_choices), the best candidates of every structure of them
(Search.best_combinations, over the search space _candidates), coordinate descent over the exponents
of the best (Search.refine: one slot at a time, _Moves.slot_step), and where that does not fit within
the noise, more structures, one more term (Search.grow) and two slots moved together
(Search.polish, _Moves.joint_step). Search.models gives the chosen models (their statistics:
fit_stats.finish); Search.reselect chooses a resample's model from the candidates the search of the
original data reached.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from perfsweep.modeling.fit_core import Entries, Fit, cholesky, solve, term_values
from perfsweep.modeling.fit_stats import finish
from perfsweep.modeling.model import Model
from perfsweep.modeling.structures import Structure, structures

_JOINT = 10  # pairs per slot in a joint move of two slots
_POLISH = 3  # candidates per call path that get joint moves
_MARGIN = 1.25  # refine the candidates whose weighted RSS is within this factor of the best


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
    term: np.ndarray  # per structure and factor slot: its term (-1: unused) ...
    param: np.ndarray  # ... and its parameter, as in Entries


@lru_cache(maxsize=16)
def _candidates(q: int, t: int, extra_terms: int, t_extra: int) -> _Candidates:
    """Structures with lower-order terms beside their products take only the ``t_extra`` best terms
    per parameter (3 parameters: 400 candidates instead of 1,100)."""
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
            sub = picks if len({k for term in st for k in term}) == sum(map(len, st)) else \
                picks[np.all(picks[:, list(present)] < t_extra, axis=1)]
            cols = [np.zeros(len(sub), int)]
            for term in st:  # slot of the term: its picks as the digits of a base-t number
                cols.append(slots[term] + sub[:, list(term)] @ (t ** np.arange(len(term) - 1, -1, -1)))
            by_k.setdefault(len(cols), []).append((np.stack(cols, axis=1), sub,
                                                   np.full(len(sub), len(all_structures) - 1)))
    groups = tuple(tuple(np.concatenate(parts) for parts in zip(*v)) for _, v in sorted(by_k.items()))
    width = max(1, max(sum(map(len, st)) for st in all_structures))
    term = np.full((len(all_structures), width), -1)
    param = np.full((len(all_structures), width), -1)
    for i, st in enumerate(all_structures):
        for j, (t, k) in enumerate((t, k) for t, factors in enumerate(st) for k in factors):
            term[i, j], param[i, j] = t, k
    return _Candidates(tuple(slots.items()), offset, groups, tuple(all_structures), term, param)


class _Moves(Fit):
    """Moves of the exponents of candidate models (Entries), in place: one slot to every pair of its
    parameter (slot_step), two slots of one parameter together (joint_step), each keeping the order of
    lower-order terms (must_order)."""

    def __init__(self, x, ybar, noise, names, pairs, opts):
        super().__init__(x, ybar, noise, names, pairs, opts)
        # growth rank of every pair (equal growth, equal rank), for the order of lower-order terms
        self.rank = [np.unique([(float(i), j) for i, j in pk], axis=0, return_inverse=True)[1].ravel() for pk in pairs]
        self.free = [any(i < 0 for i, _ in pk) for pk in pairs]

    def must_order(self, en: Entries) -> np.ndarray:
        """(E, L, L): slot lo must not grow faster than slot hi (same parameter, lo's term a proper
        sub-product of hi's, or the same parameters and later). Parameters with negative exponents
        are exempt (n/p + p: the work shrinks with p, the overhead grows)."""
        e, width = en.term.shape
        member = np.zeros((e, max(1, int(en.term.max(initial=-1)) + 1), self.q), bool)
        for slot in range(width):
            u = np.flatnonzero(en.term[:, slot] >= 0)
            member[u, en.term[u, slot], en.param[u, slot]] = True
        sets = member[np.arange(e)[:, None], np.maximum(en.term, 0)]  # (E, L, q) parameters of each slot's term
        sub = np.all(~sets[:, :, None, :] | sets[:, None, :, :], axis=3)  # set(lo) <= set(hi)
        same = sub & sub.transpose(0, 2, 1)
        tl, th = en.term[:, :, None], en.term[:, None, :]
        free = np.array(self.free)[np.maximum(en.param, 0)]
        return ((en.param[:, :, None] == en.param[:, None, :]) & (tl >= 0) & (th >= 0) & (tl != th) & ~free[:, :, None]
                & ((sub & ~same) | (same & (tl > th))))

    def in_order(self, must, ranks) -> np.ndarray:
        """Whether slot growth ranks (E, L, ...) respect ``must`` (E, L, L)."""
        ok = np.ones(ranks.shape[:1] + ranks.shape[2:], bool)
        for lo, hi in zip(*np.nonzero(must.any(axis=0))):
            ok &= ~must[:, lo, hi].reshape((-1,) + (1,) * (ranks.ndim - 2)) | (ranks[:, lo] <= ranks[:, hi])
        return ok

    def slot_ranks(self, en: Entries) -> np.ndarray:
        ranks = np.zeros(en.sel.shape, int)
        for k in range(self.q):
            m = en.param == k
            ranks[m] = self.rank[k][en.sel[m]]
        return ranks

    def rest(self, en: Entries, sv: np.ndarray, slot: int) -> np.ndarray:
        """(E, N): the product of the other factors in the term of ``slot`` (ones where unused)."""
        t = en.term[:, slot]
        out = np.ones((len(t), self.n))
        for other in range(en.sel.shape[1]):
            same = (en.term[:, other] == t) & (t >= 0) & (other != slot)
            out[same] *= sv[same, other]
        return out

    @staticmethod
    def per_param(tables: list, params: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Row e of ``tables[params[e]][index[e]]`` (index clamped to that parameter's pairs)."""
        return np.stack([tables[k][np.minimum(index[i], len(tables[k]) - 1)] for i, k in enumerate(params)])

    def slot_step(self, en: Entries, slot: int, must: np.ndarray):
        """The best pair (E,) for ``slot`` of every entry with the other slots held, and its score."""
        score = self.slot_scores(en, slot, must)
        pick = np.argmin(score, axis=1)
        return pick, score[np.arange(len(pick)), pick]

    def slot_scores(self, en: Entries, slot: int, must: np.ndarray) -> np.ndarray:
        """Scores (E, P) of every pair for ``slot`` of every entry with the other slots held (inf where
        the slot is unused or the pair does not exist). One column varies: the fixed part of the
        normal equations is inverted once per entry (Schur complement), and the moments of all P
        alternatives come from a few (K, N) @ (N, P) products."""
        sv, cols, used = self.columns(en)
        g0, b0 = self.moments(en, cols, used)
        ranks = self.slot_ranks(en)
        t = en.term[:, slot]
        rest = self.rest(en, sv, slot)
        out = np.full((len(t), max(len(v) for v in self.values)), np.inf)
        kk = cols.shape[1]
        f = kk - 1  # index of the varying column after the move
        for k in range(self.q):
            e = np.flatnonzero((t >= 0) & (en.param[:, slot] == k))
            if not len(e):
                continue
            vk = self.values[k]  # (P, N)
            w, y, r = self.w[en.row[e]], self.y[en.row[e]], rest[e]
            ii = np.arange(len(e))[:, None]
            order = np.argsort(np.arange(kk)[None, :] == (t[e] + 1)[:, None], axis=1, kind="stable")
            gp = g0[e][ii[:, :, None], order[:, :, None], order[:, None, :]]
            bp = b0[e][ii, order]
            fixed = cols[e][ii, order[:, :f]] * (w * r)[:, None, :]  # (Ek, K-1, N)
            gv = (fixed.reshape(-1, self.n) @ vk.T).reshape(len(e), f, len(vk))  # one BLAS call
            gvv = (w * r * r) @ (vk * vk).T  # (Ek, P)
            bv = (w * r * y) @ vk.T
            # Schur complement: the fixed part (Jacobi-scaled) is inverted once, then every
            # alternative for the varying column costs a few (Ek, P) operations
            d = np.sqrt(np.einsum("ekk->ek", gp[:, :f, :f]))
            d = np.where(d > 0, d, 1.0)
            dv = np.sqrt(np.where(gvv > 0, gvv, 1.0))
            inv = np.linalg.inv(gp[:, :f, :f] / (d[:, :, None] * d[:, None, :]) + 1e-13 * np.eye(f))
            bfs = bp[:, :f] / d
            gvs = gv / (d[:, :, None] * dv[:, None, :])  # (Ek, K-1, P)
            bvs = bv / dv
            beta0 = np.einsum("eij,ej->ei", inv, bfs)  # the fit without the varying column
            u = inv @ gvs
            schur = np.where(gvv > 0, 1.0, 0.0) - np.einsum("eip,eip->ep", gvs, u)
            ok = schur > 1e-10  # the varying column is not (nearly) a combination of the others
            resid = bvs - np.einsum("eip,ei->ep", gvs, beta0)
            beta_v = resid / np.where(ok, schur, 1.0)
            fitted = np.einsum("ei,ei->e", bfs, beta0)[:, None] + beta_v * resid
            if self.opts.positive:
                beta_f = beta0[:, :, None] - u * beta_v[:, None, :]
                must_pos = self.positive(used[e])[ii, order[:, :f]][:, :, None]
                ok &= (beta_v > 0) & np.all(~must_pos | (beta_f > 0), axis=1)
            ywy = self.ywy[en.row[e]][:, None]
            rss = np.maximum(ywy - fitted, 0.0)
            rk = np.repeat(ranks[e][:, :, None], len(vk), axis=2)
            rk[:, slot, :] = self.rank[k][None, :]
            ok &= self.in_order(must[e], rk)
            out[e, : len(vk)] = np.where(ok, self.score(rss, used[e].sum(axis=1)[:, None], ywy), np.inf)
        return out

    def joint_step(self, en: Entries, s1: int, s2: int, must: np.ndarray) -> None:
        """Move slots ``s1`` and ``s2`` (the same parameter in two terms) together, in place: each
        slot's ``_JOINT`` best pairs from single moves, every combination. Reaches a^2 log2(b) + a from
        a^7/4 log2(b) + a^7/4, where every single move is worse."""
        act = np.flatnonzero((en.term[:, s1] >= 0) & (en.term[:, s2] >= 0) & (en.param[:, s1] == en.param[:, s2]))
        if not len(act):
            return
        sub = en.take(act)
        cand = [np.argsort(self.slot_scores(sub, s, must[act]), axis=1)[:, :_JOINT] for s in (s1, s2)]
        sv, cols, used = self.columns(sub)
        g0, b0 = self.moments(sub, cols, used)
        k = sub.param[:, s1]
        w, y = self.w[sub.row], self.y[sub.row]
        vary = []  # the two varying columns for every candidate pair: (E, J, N) each
        for s, c in zip((s1, s2), cand):
            vary.append(self.per_param(self.values, k, c) * self.rest(sub, sv, s)[:, None, :])
        v1, v2 = sub.term[:, s1] + 1, sub.term[:, s2] + 1
        ii = np.arange(len(act))
        g = np.repeat(np.repeat(g0[:, None, None], _JOINT, axis=1), _JOINT, axis=2)  # (E, J, J, K, K)
        b = np.repeat(np.repeat(b0[:, None, None], _JOINT, axis=1), _JOINT, axis=2)
        for v, c, axis in ((v1, vary[0], 1), (v2, vary[1], 2)):
            cross = np.einsum("ekn,en,ejn->ejk", cols, w, c)  # every column against the varying ones
            cross = cross[:, :, None, :] if axis == 1 else cross[:, None, :, :]
            g[ii, :, :, v, :] = cross
            g[ii, :, :, :, v] = cross
            own = np.einsum("ejn,en,ejn->ej", c, w, c)
            g[ii, :, :, v, v] = own[:, :, None] if axis == 1 else own[:, None, :]
            rhs = np.einsum("ejn,en->ej", c, w * y)
            b[ii, :, :, v] = rhs[:, :, None] if axis == 1 else rhs[:, None, :]
        both = np.einsum("ejn,en,ein->eji", vary[0], w, vary[1])
        g[ii, :, :, v1, v2] = both
        g[ii, :, :, v2, v1] = both
        ywy = self.ywy[sub.row][:, None, None]
        _, rss, ok = solve(g, b, ywy, self.positive(used)[:, None, None, :])
        ranks = np.broadcast_to(self.slot_ranks(sub)[:, :, None, None], (len(act), sub.sel.shape[1], _JOINT, _JOINT)).copy()
        ranks[:, s1] = self.per_param(self.rank, k, cand[0])[:, :, None]
        ranks[:, s2] = self.per_param(self.rank, k, cand[1])[:, None, :]
        ok &= self.in_order(must[act], ranks)
        score = np.where(ok, self.score(rss, used.sum(axis=1)[:, None, None], ywy), np.inf).reshape(len(act), -1)
        best = np.argmin(score, axis=1)
        move = score[ii, best] < sub.score
        j1, j2 = np.unravel_index(best, (_JOINT, _JOINT))
        en.sel[act[move], s1] = cand[0][ii, j1][move]
        en.sel[act[move], s2] = cand[1][ii, j2][move]
        en.score[act[move]] = score[ii, best][move]


class Search(_Moves):
    """The models of M measurement sets (M x N means) on the same N x q points: steps 1-4."""

    def __init__(self, x, ybar, noise, names, pairs, opts):
        super().__init__(x, ybar, noise, names, pairs, opts)
        self.t = opts.candidates if self.q <= 4 else min(opts.candidates, 2)
        self.extra = opts.extra_terms if self.q <= 3 else 0

    # step 1 -------------------------------------------------------------------------------------
    def single_parameter_choices(self) -> tuple[np.ndarray, np.ndarray]:
        """Per model and parameter the T best pair indices (M, q, T) and whether each is usable.

        On a full grid each pair is fitted to the marginal means of the parameter (the others
        averaged out). Elsewhere (grids with holes, sparse lines-plus-points layouts, random
        points) marginal means mix different points at different values and mislead; then each
        pair is fitted to every line of the points (the points that share the other parameters'
        values) with its own intercept and slope per line (the other parameters as nuisance
        factors, as in Extra-P's sparse modeler), and the residuals of all lines are pooled."""
        choice = np.zeros((self.m, self.q, self.t), int)
        usable = np.zeros((self.m, self.q, self.t), bool)
        full = self.q == 1 or len(np.unique(self.x, axis=0)) == self.n == np.prod(
            [len(np.unique(self.x[:, k])) for k in range(self.q)])
        for k in range(self.q):
            rss, valid = self.marginal_fit(k) if full else self.line_fit(k)
            rss = np.where(valid, rss, np.inf)
            order = np.argsort(rss, axis=1, kind="stable")[:, : self.t]
            got = order.shape[1]
            choice[:, k, :got] = order
            usable[:, k, :got] = np.isfinite(np.take_along_axis(rss, order, axis=1))
        return choice, usable

    def marginal_fit(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(M, P) RSS of every pair of parameter k on its marginal means, and which fits are usable."""
        u, inv = np.unique(self.x[:, k], return_inverse=True)
        onehot = np.zeros((self.n, len(u)))
        onehot[np.arange(self.n), inv] = 1.0
        marg = (self.y @ onehot) / onehot.sum(axis=0)  # (M, U)
        tv = term_values(u, self.pairs[k])  # (P, U)
        w = 1.0 / marg ** 2 if self.opts.weighting == "relative" else np.ones_like(marg)
        sw = w.sum(axis=1, keepdims=True)
        dt = tv[None] - ((w @ tv.T) / sw)[:, :, None]  # (M, P, U) centred term values
        dy = marg - (w * marg).sum(axis=1, keepdims=True) / sw  # (M, U)
        stt = np.einsum("mu,mpu->mp", w, dt * dt)
        varies = stt > 1e-12 * np.einsum("mu,pu->mp", w, tv * tv)
        slope = np.einsum("mu,mpu->mp", w * dy, dt) / np.where(varies, stt, 1.0)
        rss = np.einsum("mu,mpu->mp", w, (dy[:, None, :] - slope[:, :, None] * dt) ** 2)
        return rss, (varies & (slope > 0) if self.opts.positive else varies)

    def line_fit(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(M, P) pooled RSS of every pair of parameter k over the lines of the points (an intercept
        and a slope per line), and which fits are usable (the pooled slope positive). Lines with
        fewer than 3 points carry no information on the form; without any such line, all points
        form one line."""
        others = np.delete(self.x, k, axis=1)
        _, line = np.unique(others, axis=0, return_inverse=True)
        line = line.ravel()
        sizes = np.bincount(line)
        keep = sizes[line] >= 3
        if not keep.any():
            keep, line = np.ones(self.n, bool), np.zeros(self.n, int)
        _, line = np.unique(line[keep], return_inverse=True)
        member = np.zeros((int(keep.sum()), line.max() + 1))
        member[np.arange(len(line)), line] = 1.0  # (N', G)
        tv = self.values[k][:, keep]  # (P, N')
        y, w = self.y[:, keep], self.w[:, keep]
        sw = w @ member  # (M, G)
        swy, swyy = (w * y) @ member, (w * y * y) @ member
        swt = np.einsum("mn,pn,ng->mpg", w, tv, member)
        swtt = np.einsum("mn,pn,ng->mpg", w, tv * tv, member)
        swyt = np.einsum("mn,pn,ng->mpg", w * y, tv, member)
        stt = swtt - swt ** 2 / sw[:, None]
        sty = swyt - swt * (swy / sw)[:, None]
        syy = swyy - swy ** 2 / sw
        scale = swtt.sum(axis=2)
        varies = stt > 1e-12 * np.maximum(swtt, 1e-300)
        rss = syy[:, None] - np.where(varies, sty ** 2 / np.where(varies, stt, 1.0), 0.0)
        rss = np.maximum(rss, 0.0).sum(axis=2)
        any_varies = (varies.sum(axis=2) > 0) & (scale > 0)
        valid = any_varies & (np.where(varies, sty, 0.0).sum(axis=2) > 0) if self.opts.positive else any_varies
        return rss, valid

    # step 2 -------------------------------------------------------------------------------------
    def best_combinations(self, choice, usable):
        """Per model the ``refine_picks`` best candidates of each of its ``refine_structures`` best
        structures: structure indices (M, S*R) (-1: none), the pair index per parameter (M, S*R, q),
        the search space, and the candidates' scores (M, S*R)."""
        cands = _candidates(self.q, self.t, self.extra, self.t if self.q <= 2 else min(self.t, 2))
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
        scores, all_picks, all_sids = [], [], []
        for cols, picks, sids in cands.groups:
            k = cols.shape[1]
            _, fitted, ok = cholesky(lambda i, j: gram[:, cols[:, i], cols[:, j]], lambda i: rhs[:, cols[:, i]], k,
                                     self.opts.positive)
            for j in range(self.q):  # a candidate needs a usable term for every parameter it has
                has = picks[:, j] >= 0
                ok &= ~has | usable[:, j, np.maximum(picks[:, j], 0)]
            ok &= k < self.n
            scores.append(np.where(ok, self.score(np.maximum(self.ywy[:, None] - fitted, 0.0), k, self.ywy[:, None]),
                                   np.inf))
            all_picks.append(picks)
            all_sids.append(sids)
        score, picks, sids = np.concatenate(scores, axis=1), np.concatenate(all_picks), np.concatenate(all_sids)
        # the candidates of one structure are contiguous: best per structure, then the best structures
        starts = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]])
        per_structure = np.minimum.reduceat(score, starts, axis=1)  # (M, structures)
        r = self.opts.refine_picks
        ends = np.r_[starts[1:], len(sids)]
        arg = np.stack([np.pad(np.argsort(score[:, a:b], axis=1, kind="stable")[:, :r] + a, ((0, 0), (0, r - min(r, b - a))),
                               mode="edge") for a, b in zip(starts, ends)], axis=1)  # (M, structures, R)
        top = np.argsort(per_structure, axis=1, kind="stable")[:, : self.opts.refine_structures]
        best = np.take_along_axis(arg, top[:, :, None], axis=1).reshape(self.m, -1)  # (M, S * R) candidates
        found = np.isfinite(np.take_along_axis(score, best, axis=1))
        pick = picks[best]  # (M, S * R, q) index into the choices
        pair = np.take_along_axis(choice[:, None, :, :].repeat(pick.shape[1], axis=1),
                                  np.maximum(pick, 0)[..., None], axis=3)[..., 0]
        return (np.where(found, sids[best], -1), np.where(pick >= 0, pair, -1), cands,
                np.take_along_axis(score, best, axis=1))

    # steps 3 and 4 ------------------------------------------------------------------------------
    def entries(self, sids, pairs, cands: _Candidates, scores) -> Entries:
        """Step 2's candidates (with their scores) in the padded slot layout of :class:`Entries`."""
        rows, rank = np.nonzero(sids >= 0)
        sid = sids[rows, rank]
        par = cands.param[sid]
        sel = np.where(par >= 0, np.take_along_axis(pairs[rows, rank], np.maximum(par, 0), axis=1), 0)
        return Entries(rows, cands.term[sid], par, sel, scores[rows, rank])

    def polish(self, en: Entries) -> None:
        """Joint moves of every pair of slots that share a parameter, then coordinate descent again."""
        must = self.must_order(en)
        width = en.sel.shape[1]
        for s1, s2 in itertools.combinations(range(width), 2):
            self.joint_step(en, s1, s2, must)
        self.refine(en)

    def refine(self, en: Entries) -> None:
        """Coordinate descent over the exponents of every slot of every entry, in place: a parameter
        may end with different exponents in different terms (n/p + log2(p)). Each step works on the
        entries that use the slot; each round on those that moved in the round before."""
        must = self.must_order(en)
        todo = np.arange(len(en.row))
        for _ in range(self.opts.refine_rounds):
            moved = np.zeros(len(en.row), bool)
            for slot in range(en.sel.shape[1]):
                act = todo[en.term[todo, slot] >= 0]
                if not len(act):
                    continue
                sub = en.take(act)
                pick, score = self.slot_step(sub, slot, must[act])
                move = score < sub.score
                en.sel[act[move], slot] = pick[move]
                en.score[act[move]] = score[move]
                moved[act[move]] = True
            todo = np.flatnonzero(moved)
            if not len(todo):
                break

    def grow(self, en: Entries) -> Entries:
        """Entries with one more single-parameter term (any parameter, any exponent) where the
        criterion says it pays: lower-order terms that step 1's marginal means cannot show, such as
        the log2(p) beside n/p."""
        width = en.sel.shape[1]
        grown = []
        for k in range(self.q):
            g = Entries(en.row, np.c_[en.term, en.term.max(axis=1) + 1], np.c_[en.param, np.full(len(en.row), k)],
                        np.c_[en.sel, np.zeros(len(en.row), int)], en.score)
            pick, score = self.slot_step(g, width, self.must_order(g))
            keep = score < en.score
            g.sel[:, width] = pick
            g.score = score
            grown.append(g.take(keep))
        return Entries.concat(grown)

    def promising(self, en: Entries) -> Entries:
        """The entries whose weighted RSS is within ``_MARGIN`` times their call path's best (and one
        coefficient's penalty): those that refinement can still make the best."""
        best = np.full(self.m, np.inf)
        np.minimum.at(best, en.row, en.score)
        return en.take(en.score <= best[en.row] + self.n * np.log(_MARGIN) + self.pen)

    # result -------------------------------------------------------------------------------------
    def models(self) -> list[Model]:
        choice, usable = self.single_parameter_choices()
        en = self.entries(*self.best_combinations(choice, usable))
        if self.q > 1:
            # the best candidate of step 2 is refined; where it does not fit within the noise that the
            # repetitions show, the best structures and those grown by one term are refined, and the
            # refined ones grown once more (refined exponents can make room for a term); where that
            # does not fit either, the best few get joint moves
            first = self.best_per_row(en)
            self.refine(first)
            wide = ~self.fits_noise(first)
            if wide.any():
                rest = en.take(wide[en.row])
                rest = self.promising(Entries.concat([rest, self.grow(rest)]).unique())
                self.refine(rest)
                rest = rest.unique()
                grown = self.grow(self.promising(rest))
                self.refine(grown)
                rest = Entries.concat([rest, grown])
                still = ~self.fits_noise(self.best_per_row(rest)) & wide
                if still.any():
                    polished = self.best_per_row(rest.take(still[rest.row]), _POLISH)
                    self.polish(polished)
                    rest = Entries.concat([rest, polished])
                first = Entries.concat([first, rest])
            en = first
        self.pool = en.unique()  # every candidate the search reached (seeds the resamples' selection)
        out: list[Model | None] = [None] * self.m
        finish(self, self.best_per_row(en), out)
        return out  # type: ignore[return-value]

    def reselect(self, seed: Entries) -> list[Model]:
        """The models of resampled data (several parameters), chosen like :meth:`models` but from a
        known pool: the candidates the search of the original data reached (``seed``, rows of this
        fit), rescored on the resample, together with the resample's own step-2 candidates; the best
        then gets the same coordinate descent over its exponents. Unlike :meth:`models` no structure
        is grown or polished anew: a resample is the original data with other noise, so the original
        search's candidates stand for the structures it can choose (the costly widening is done once,
        not once per resample)."""
        choice, usable = self.single_parameter_choices()
        own = self.entries(*self.best_combinations(choice, usable))
        seed = replace(seed, score=self.entry_scores(seed))
        pool = Entries.concat([own, seed])
        best = self.best_per_row(pool)
        self.refine(best)
        out: list[Model | None] = [None] * self.m
        finish(self, best, out)
        return out  # type: ignore[return-value]
