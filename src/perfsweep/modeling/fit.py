"""Fitting PMNF models: candidate terms per parameter, sum/product structures, exponent refinement.

    model = fit_model(X, Y, ["n", "m"])                 # Y: N values or N x repetitions
    models = fit_models(X, [Y1, Y2, ...], ["n", "m"])   # many call paths / metrics on the same points

The method (every choice measured against Extra-P 4.2.5 with bench/modeler_vs_extrap.py):

1. Per parameter, the mean measurement per value of that parameter (the others averaged out) is fitted
   with every hypothesis c_0 + c_1 x^i log2(x)^j of the search space at once (closed-form weighted
   simple regression). The ``candidates`` best by residual sum of squares go on. On points that are
   not a full grid (holes, sparse lines-plus-points layouts, random points) every line of points
   sharing the other parameters' values is fitted instead, each with its own intercept and slope.
2. Every structure (structures.py: a*b, a+b, a*b+a, ...; Extra-P's combinations and more) of every
   combination of those terms, and every subset of parameters (the others without influence), is
   fitted to all points by weighted least squares. All candidates' normal equations come out of one
   Gram matrix of the distinct columns they use, so a candidate costs a K x K solve, not a pass over
   the points.
3. The best candidate's exponents are searched again over the whole search space against all points,
   one (term, parameter) slot at a time (coordinate descent), which finds terms that the marginal
   means of step 1 ranked too low; a parameter may take different exponents in different terms.
4. Where that model does not fit within the noise the repetitions show (a 99 % chi-square bound; with
   one repetition, unless it fits exactly), the search widens: the best candidates of the best
   structures are refined too, each grown by one more single-parameter term (the log2(p) beside n/p,
   which no marginal mean shows), and two slots of one parameter are moved together (a^2 log2(b) + a
   from a^7/4 log2(b) + a^7/4, where every single move is worse).

5. A chosen model that explains less variance (adjusted R^2) than the best single-term model of one
   or two factors (with 3 parameters also three) is replaced by that model (where it fits within the
   noise, if more than 0.01 less).

Every measurement set is scaled to a largest mean of 1 before fitting; sets with zeros are fitted
without weights, sets with negative values also without the sign rule; with ``bootstrap`` the
repetitions are resampled and every resample modelled anew: with one parameter by the whole search,
with several by a selection seeded with the candidates that the search of the original data reached
(steps 2-4 once per set, not once per resample; _Fit.reselect). The reported model is then the one
that the resamples agree with (modeling.consensus: Model.lead_share, .interval), in two rounds: the
first resamples the repetitions alone; the second also moves every point's mean by the scatter that
the first round's model leaves beyond the repetitions' noise (the host's drift between configurations
measured at different times, which one configuration's repetitions do not show: on the 2-core test
machines the same point measured 3.48 s and 3.00 s half an hour apart).

Selection: N log(RSS_w / N) + penalty * ln(N) * K (the Gaussian log-likelihood with unknown noise and
a penalty per coefficient, twice BIC's). Every term coefficient must be positive (each term of a
run-time model is a cost), and a lower-order term (a sub-product of another) may not grow faster than
that term, except in parameters with negative exponents (n/p + p). Weights are 1/y^2 (relative
errors), which suits run times whose noise is multiplicative and whose values span orders of
magnitude. In the benchmark each of these beat its alternative (leave-one-out selection, Extra-P's
fixed structures and exponents shared across terms, free-sign coefficients, a chi-square criterion
with the repetitions' noise level); the leave-one-out score is still reported for the chosen model.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import Sequence

import numpy as np
from scipy.stats import chi2

from perfsweep.errors import ModelingError
from perfsweep.modeling.consensus import consensus
from perfsweep.modeling.model import Model, fill_statistics, statistics
from perfsweep.modeling.structures import Structure, structures
from perfsweep.modeling.terms import EXACT, Factor, Term, exponent_pairs

_FLOOR = 1e-9  # a term changing no value by more than this fraction (unweighted: of the largest) is not a term
_R2_SLACK = 0.01  # a model within the noise may explain this much less variance than a single term
_CHUNK = 256  # call paths fitted at once (bounds the memory of the candidate arrays)
_JOINT = 10  # pairs per slot in a joint move of two slots
_POLISH = 3  # candidates per call path that get joint moves
_MARGIN = 1.25  # refine the candidates whose weighted RSS is within this factor of the best
MIN_VALUES = 3  # distinct values of each parameter a model needs (5 are advised: FewValuesWarning)


class FewValuesWarning(UserWarning):
    """Fewer than 5 distinct values of a parameter (Extra-P's rule of thumb)."""


@dataclass(frozen=True)
class FitOptions:
    negative_exponents: bool = False  # add x^-1/2 .. x^-2 for every parameter
    negative_params: tuple[str, ...] = ()  # ... or only for these (strong scaling in p)
    power_params: tuple[str, ...] = ()  # parameters searched with powers only, no log2 factors
    candidates: int = 3  # single-parameter terms per parameter carried into the combination step (4+: 2)
    extra_terms: int = 2  # lower-order terms beside a product (a*b + a + b); 0 with 4 or more parameters
    penalty: float = 2.0  # per coefficient, times ln(N)
    refine_rounds: int = 3  # coordinate-descent rounds over the exponents of a structure's terms
    refine_structures: int = 3  # the best structures of step 2 whose exponents are refined ...
    refine_picks: int = 2  # ... each with its best candidates (terms from step 1)
    positive: bool = True  # term coefficients must be positive
    weighting: str = "relative"  # "relative" (1/y^2) or "none" (Extra-P's plain least squares)
    bootstrap: int = 0  # resamples of the repetitions, each modelled anew (lead-term share, intervals)
    # parameters whose form is given, not searched: ((name, ((i, j), ...)), ...); such a parameter needs
    # only one value more than its hypotheses (two values of p with the one form p^-1: Amdahl's law)
    assumed: tuple = ()
    seed: int = 0  # of the resampling (the same input gives the same intervals)


def fit_model(x, y, param_names=None, *, options: FitOptions | None = None) -> Model:
    """Fit a PMNF model to points ``x`` (N x q) and measurements ``y`` (N, or N x repetitions; NaN
    marks a missing repetition). Raises ModelingError for input that cannot be modelled."""
    return _fit_all(x, [y], param_names, options, strict=True)[0]


def fit_models(x, ys: Sequence, param_names=None, *, options: FitOptions | None = None) -> list[Model | None]:
    """One model per measurement set of ``ys`` (each N, or N x repetitions) on the same points ``x``:
    the call paths and metrics of one experiment, fitted together (like Extra-P's model_all).

    A set that cannot be modelled (a NaN or inf value, the wrong length) gets None and a
    ModelingWarning naming it; the others are fitted. Bad points ``x`` raise ModelingError."""
    return _fit_all(x, ys, param_names, options, strict=False)


class ModelingWarning(UserWarning):
    """A measurement set of a batch that could not be modelled (the others were)."""


def _fit_all(x, ys, param_names, options, strict: bool) -> list[Model | None]:
    """Sets with positive values are fitted with the options' weighting, sets with zeros or negative
    values (a difference, a count) without weights; all zeros is the model 0. Every set is scaled to
    a largest mean of 1 first, so values of 1e-160 or 1e160 fit like values of 1."""
    opts = options or FitOptions()
    if opts.weighting not in ("relative", "none"):
        raise ModelingError(f"weighting must be 'relative' or 'none', not {opts.weighting!r}")
    assumed = dict(opts.assumed)
    x, names = _check_points(x, param_names, {name: len(p) + 1 for name, p in assumed.items()})
    out: list[Model | None] = [None] * len(ys)
    batch = _Sets(ys, len(x), opts)
    groups: dict[tuple[str, bool], list[tuple[int, np.ndarray, float]]] = {}
    for i in range(len(ys)):
        if i in batch.bad:
            try:
                _check_values(ys[i], len(x))  # the set's error
            except ModelingError as exc:
                if strict:
                    raise
                warnings.warn(f"measurement set {i}: {exc}", ModelingWarning, stacklevel=3)
            continue
        if batch.scale[i] == 0:
            out[i] = _zero_model(names, x, batch.ybar[i])
            continue
        groups.setdefault(batch.kind[i], []).append((i, batch.scaled[i], float(batch.scale[i])))
    pairs = [tuple(assumed[name]) if name in assumed else
             _pairs(opts.negative_exponents or name in opts.negative_params, name not in opts.power_params)
             for name in names]
    rng = np.random.default_rng(opts.seed)
    for (weighting, positive), sets in groups.items():
        o = replace(opts, weighting=weighting, positive=positive)
        index = [i for i, _, _ in sets]
        ybar, noise = batch.ybar[index], batch.noise[index]
        models: list[Model] = []
        pools: list[_Entries] = []  # per set: the candidates its search reached (rows: the set's index)
        for start in range(0, len(sets), _CHUNK):
            stop = min(start + _CHUNK, len(sets))
            fit = _Fit(x, ybar[start:stop], noise[start:stop], names, pairs, o)
            models += fit.models()
            if x.shape[1] > 1 and opts.bootstrap:
                pool = replace(fit.pool, row=fit.pool.row + start)
                pools += [pool.take(pool.row == j) for j in range(start, start + fit.m)]
        relative = weighting == "relative"
        amdahl = tuple(k for k, name in enumerate(names) if any(i < 0 for i, _ in assumed.get(name, ())))
        w = [1.0 / y ** 2 if relative else np.ones_like(y) for y in ybar]

        def choose(excess: list[float], known: list[Model]) -> list[Model]:
            """Every set's reported model (consensus) over resamples that stray by ``excess`` more; the
            forms of ``known`` (a first round's choices) are candidates too."""
            draws, owner = [], []
            for j, (_, c, _) in enumerate(sets):
                if opts.bootstrap and np.max(np.sum(~np.isnan(c), axis=1)) >= 2:
                    draws.append(_resampled_means(c, opts.bootstrap, rng, excess[j], relative))
                    owner += [j] * opts.bootstrap
            if not draws:
                return models
            owner_arr = np.array(owner, int)
            means = np.concatenate(draws)
            resampled = _resample_models(x, means, noise[owner_arr], owner_arr, pools, names, pairs, o)
            out = []
            for j, model in enumerate(models):
                mine = np.flatnonzero(owner_arr == j)
                out.append(consensus(model, [known[j], *(resampled[b] for b in mine)], x, ybar[j], means[mine], w[j],
                                     o.penalty * np.log(len(x)), positive, relative, amdahl))
            return out

        # the scatter a model leaves beyond the repetitions' noise (the host's drift between
        # configurations, what the form misses) is known only from a model that the resamples chose:
        # a first round over the repetitions alone, then the round that also carries that scatter
        final, scatter = models, [None] * len(sets)
        if opts.bootstrap:
            first = choose([0.0] * len(sets), models)
            scatter = [_scatter(m, ybar[j], noise[j], relative) for j, m in enumerate(first)]
            excess = [min(_excess(s, noise[j]), _spread(ybar[j], relative)) for j, s in enumerate(scatter)]
            final = first
            if any(e > 0 for e in excess):
                final, scatter = choose(excess, first), [None] * len(sets)
        for j, (i, _, scale) in enumerate(sets):
            chosen = final[j]
            if chosen.bootstrap:  # the scatter widens the intervals, which need resamples
                s = scatter[j] if scatter[j] is not None else _scatter(chosen, ybar[j], noise[j], relative)
                chosen.scatter, chosen.scatter_relative = s, relative
            out[i] = _rescaled(chosen, scale)
    return out


def _scatter(model: Model, ybar: np.ndarray, noise: float, relative: bool) -> float:
    """How far a new measurement of a point's mean strays from the model (relative with relative
    weights): the residuals' spread over their degrees of freedom, at least the repetitions' own noise
    of a mean. It holds what the repetitions of one round do not show: the host's drift between the
    configurations (measured at different times) and what the form misses."""
    resid = ybar - model.predict(model.points)
    if relative:
        resid = resid / ybar
    dof = len(ybar) - len(model.terms) - 1
    spread = float(np.sum(resid * resid) / dof) if dof > 0 else float("nan")
    return float(np.sqrt(np.fmax(spread, noise)))


def _excess(scatter: float, noise: float) -> float:
    """The part of the scatter (a standard deviation) that the repetitions do not show."""
    return float(np.sqrt(max(scatter * scatter - (noise if np.isfinite(noise) else 0.0), 0.0))) if np.isfinite(scatter) else 0.0


def _spread(ybar: np.ndarray, relative: bool) -> float:
    """How much the means themselves vary (the log spread with relative weights): a model that leaves
    more scatter than that explains nothing, and resamples moved further would be noise alone (a
    metric of 1e-4 s that a first-round model missed by 3000 % drew means of 0 and inf)."""
    return float(np.std(np.log(ybar), ddof=1) if relative else np.std(ybar, ddof=1))


def _resample_models(x, ybar, noise, owner, pools, names, pairs, opts) -> list[Model]:
    """The models of the resamples (rows of ``ybar``; ``owner``: the set each was drawn from). One
    parameter: the whole search, which is cheap. Several: the search is seeded with the candidates
    the search of the owner's original data reached (_Fit.reselect): the default config's models
    stage took 8.3 s CPU with the whole search per resample, 3.0 s so."""
    models: list[Model] = []
    for start in range(0, len(ybar), _CHUNK):
        fit = _Fit(x, ybar[start:start + _CHUNK], noise[start:start + _CHUNK], names, pairs, opts)
        if not pools:
            models += fit.models()
            continue
        parts = [replace(pools[j], row=np.full(len(pools[j].row), r)) for r, j in enumerate(owner[start:start + _CHUNK])]
        models += fit.reselect(_Entries.concat(parts))
    return models


def _resampled_means(y: np.ndarray, count: int, rng, excess: float = 0.0, relative: bool = True) -> np.ndarray:
    """(count, N) means of the repetitions of every point drawn with replacement. The deviations
    from the point's mean are widened by sqrt(r / (r - 1)): the plain bootstrap's variance of a mean
    of r values is (r - 1) / r of the true one (a 5-repetition bootstrap interval would be too short);
    with ``relative`` the widening is of the ratio to the mean (a positive value stays positive).
    Every drawn mean then strays by ``excess`` more (a fraction of the value with ``relative``, else
    in the values' unit), independently per point: the scatter between configurations that the
    repetitions of one round do not show."""
    out = np.empty((count, len(y)))
    for n, row in enumerate(y):
        v = row[~np.isnan(row)]
        mean = v.mean()
        if len(v) < 2:
            out[:, n] = mean
            continue
        draw = v[rng.integers(len(v), size=(count, len(v)))].mean(axis=1)
        widen = np.sqrt(len(v) / (len(v) - 1))
        out[:, n] = mean * (draw / mean) ** widen if relative and mean > 0 else mean + widen * (draw - mean)
    if excess > 0:
        shift = rng.standard_normal(out.shape) * excess
        out = out * np.exp(shift - excess * excess / 2) if relative else out + shift
    return out


def _zero_model(names, x, ybar) -> Model:
    model = Model(list(names), [], np.zeros(1), points=x, values=ybar, cv_score=0.0)
    fill_statistics(model, ybar, np.zeros_like(ybar))
    return model


def _rescaled(model: Model, scale: float) -> Model:
    """The model of scaled values back in the units of the measurements."""
    model.coefficients = model.coefficients * scale
    model.values = model.values * scale
    for b in model.bootstrap:
        b.coefficients = b.coefficients * scale
    if not model.scatter_relative:
        model.scatter *= scale
    with np.errstate(over="ignore"):
        model.rss *= scale * scale
    return model


def _check_points(x, names, needed: dict[str, int] | None = None) -> tuple[np.ndarray, list[str]]:
    """The points as N x q, checked; ``needed``: fewer distinct values than MIN_VALUES that suffice
    for a parameter (one whose form is assumed)."""
    needed = needed or {}
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
        least = min(MIN_VALUES, needed.get(name, MIN_VALUES))
        if distinct < least:
            raise ModelingError(f"parameter {name} has {distinct} distinct values; at least {least} are needed")
        if distinct < 5 and name not in needed:
            warnings.warn(f"parameter {name} has only {distinct} distinct values; 5 or more are advised",
                          FewValuesWarning, stacklevel=4)
    return x, names


def _check_values(y, n: int) -> np.ndarray:
    """One measurement set as N x repetitions, checked (NaN: a missing repetition)."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != n:
        raise ModelingError(f"Y must have one row per point of X ({n}), got shape {y.shape}")
    if _unfinite(y[None])[0]:
        raise ModelingError("measurements must be finite (NaN or inf found)")
    return y


def _unfinite(y: np.ndarray) -> np.ndarray:
    """(S,) whether each set of ``y`` (S, N, repetitions) has an inf or a point without any value."""
    return np.any(np.isinf(y), axis=(1, 2)) | np.any(np.all(np.isnan(y), axis=2), axis=1)


class _Sets:
    """The measurement sets of a batch, checked, scaled to a largest mean of 1, their means and noise:
    computed for all sets of one number of repetitions at once (the same arithmetic as set by set).
    ``bad``: the sets that cannot be modelled (_check_values says why); per set index ``i``:
    ``scale[i]`` (0: all zeros), ``ybar[i]`` the means (of the scaled values; all zeros: of the
    values), ``noise[i]`` (_noise), ``scaled[i]`` (N x repetitions) and ``kind[i]``, the weighting and
    sign rule of its fit: sets with zeros are fitted unweighted (no relative error exists), sets with
    negative values (not a cost either) also without the sign rule."""

    def __init__(self, ys: Sequence, n: int, opts: FitOptions):
        m = len(ys)
        self.bad: set[int] = set()
        self.scale, self.ybar, self.noise = np.zeros(m), np.full((m, n), np.nan), np.full(m, np.nan)
        self.scaled: list[np.ndarray | None] = [None] * m
        self.kind: list[tuple[str, bool] | None] = [None] * m
        arrays: list[np.ndarray | None] = [None] * m
        by_repetitions: dict[int, list[int]] = {}
        for i, y in enumerate(ys):
            try:
                a = np.asarray(y, dtype=float)
            except (TypeError, ValueError):
                self.bad.add(i)
                continue
            arrays[i] = a[:, None] if a.ndim == 1 else a
            if arrays[i].ndim == 2 and arrays[i].shape[0] == n:
                by_repetitions.setdefault(arrays[i].shape[1], []).append(i)
            else:
                self.bad.add(i)
        for index in by_repetitions.values():
            y = np.stack([arrays[i] for i in index])  # (S, N, R)
            bad = _unfinite(y)
            self.bad.update(np.asarray(index)[bad].tolist())
            index, y = np.asarray(index)[~bad], y[~bad]
            if not len(y):
                continue
            mean = np.nanmean(y, axis=2)
            scale = np.max(np.abs(mean), axis=1)
            low = np.nanmin(y, axis=(1, 2))
            self.scale[index] = scale
            zero = scale == 0
            self.ybar[index[zero]] = mean[zero]
            index, y, scale, low = index[~zero], y[~zero], scale[~zero], low[~zero]
            if not len(y):
                continue
            y = y / scale[:, None, None]
            mean = np.nanmean(y, axis=2)
            relative = low > 0 if opts.weighting == "relative" else np.zeros(len(y), bool)
            self.ybar[index], self.noise[index] = mean, _noise(y, mean, relative)
            for j, i in enumerate(index.tolist()):
                self.scaled[i] = y[j]
                self.kind[i] = (opts.weighting, opts.positive) if low[j] > 0 else ("none", opts.positive and low[j] == 0)


def _noise(y: np.ndarray, mean: np.ndarray, relative: np.ndarray) -> np.ndarray:
    """The variance of a point's mean as the repetitions show it (relative where ``relative``),
    pooled over the points, of every set of ``y`` (S, N, repetitions) whose means are ``mean``
    (S, N); NaN without repetitions."""
    count = np.sum(~np.isnan(y), axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.where(relative[:, None, None], y / mean[:, :, None] - 1.0, y - mean[:, :, None])
        pooled = np.nansum((dev * dev).reshape(len(y), -1), axis=1) / np.sum(count - 1, axis=1) / np.mean(count, axis=1)
    return np.where(np.all(count < 2, axis=1), np.nan, pooled)


@lru_cache(maxsize=8)
def _pairs(negative: bool, logs: bool = True) -> tuple:
    return tuple(exponent_pairs(negative, logs))


def _term_values(col: np.ndarray, pairs) -> np.ndarray:
    """x^i log2(x)^j of every pair at the values ``col``: (P, len(col))."""
    return np.stack([Factor(0, i, j).values(col[:, None]) for i, j in pairs])


def _cholesky(entry, rhs, k: int, positive):
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


def _solve(g: np.ndarray, b: np.ndarray, ywy: np.ndarray, positive):
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
    term: np.ndarray  # per structure and factor slot: its term (-1: unused) ...
    param: np.ndarray  # ... and its parameter, as in _Entries


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


class _Fit:
    """Fits M measurement sets (M x N means) on the same N x q points."""

    def __init__(self, x, ybar, noise, names, pairs, opts: FitOptions):
        self.x, self.y, self.noise, self.names, self.pairs, self.opts = x, ybar, noise, names, pairs, opts
        self.n, self.q = x.shape
        self.m = len(ybar)
        self.w = 1.0 / ybar ** 2 if opts.weighting == "relative" else np.ones_like(ybar)
        self.ywy = np.sum(self.w * ybar ** 2, axis=1)
        self.values = [_term_values(x[:, k], pairs[k]) for k in range(self.q)]  # (P_k, N) per parameter
        # growth rank of every pair (equal growth, equal rank), for the order of lower-order terms
        self.rank = [np.unique([(float(i), j) for i, j in pk], axis=0, return_inverse=True)[1].ravel() for pk in pairs]
        self.free = [any(i < 0 for i, _ in pk) for pk in pairs]
        self.t = opts.candidates if self.q <= 4 else min(opts.candidates, 2)
        self.extra = opts.extra_terms if self.q <= 3 else 0
        self.pen = opts.penalty * np.log(self.n)

    def score(self, rss: np.ndarray, k: int, ywy: np.ndarray) -> np.ndarray:
        """The selection criterion; ``ywy`` (broadcast against ``rss``) sets the exact-fit floor."""
        return self.n * np.log(np.maximum(rss, EXACT * ywy) / self.n) + self.pen * k

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
        tv = _term_values(u, self.pairs[k])  # (P, U)
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
            _, fitted, ok = _cholesky(lambda i, j: gram[:, cols[:, i], cols[:, j]], lambda i: rhs[:, cols[:, i]], k,
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
    def entries(self, sids, pairs, cands: _Candidates, scores) -> "_Entries":
        """Step 2's candidates (with their scores) in the padded slot layout of :class:`_Entries`."""
        rows, rank = np.nonzero(sids >= 0)
        sid = sids[rows, rank]
        par = cands.param[sid]
        sel = np.where(par >= 0, np.take_along_axis(pairs[rows, rank], np.maximum(par, 0), axis=1), 0)
        return _Entries(rows, cands.term[sid], par, sel, scores[rows, rank])

    def columns(self, en: "_Entries"):
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

    def moments(self, en: "_Entries", cols, used):
        cw = cols * self.w[en.row][:, None, :]
        g = cw @ cols.transpose(0, 2, 1)
        b = (cw @ self.y[en.row][:, :, None])[:, :, 0]
        e, c = np.nonzero(~used)
        g[e, c, c] = 1.0  # an unused column: coefficient 0
        return g, b

    def positive(self, used):
        return (used & (np.arange(used.shape[1]) > 0)) if self.opts.positive else np.zeros_like(used)

    def must_order(self, en: "_Entries") -> np.ndarray:
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

    def slot_ranks(self, en: "_Entries") -> np.ndarray:
        ranks = np.zeros(en.sel.shape, int)
        for k in range(self.q):
            m = en.param == k
            ranks[m] = self.rank[k][en.sel[m]]
        return ranks

    def rest(self, en: "_Entries", sv: np.ndarray, slot: int) -> np.ndarray:
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

    def slot_step(self, en: "_Entries", slot: int, must: np.ndarray):
        """The best pair (E,) for ``slot`` of every entry with the other slots held, and its score."""
        score = self.slot_scores(en, slot, must)
        pick = np.argmin(score, axis=1)
        return pick, score[np.arange(len(pick)), pick]

    def slot_scores(self, en: "_Entries", slot: int, must: np.ndarray) -> np.ndarray:
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

    def joint_step(self, en: "_Entries", s1: int, s2: int, must: np.ndarray) -> None:
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
        _, rss, ok = _solve(g, b, ywy, self.positive(used)[:, None, None, :])
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

    def polish(self, en: "_Entries") -> None:
        """Joint moves of every pair of slots that share a parameter, then coordinate descent again."""
        must = self.must_order(en)
        width = en.sel.shape[1]
        for s1, s2 in itertools.combinations(range(width), 2):
            self.joint_step(en, s1, s2, must)
        self.refine(en)

    def refine(self, en: "_Entries") -> None:
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

    def grow(self, en: "_Entries") -> "_Entries":
        """Entries with one more single-parameter term (any parameter, any exponent) where the
        criterion says it pays: lower-order terms that step 1's marginal means cannot show, such as
        the log2(p) beside n/p."""
        width = en.sel.shape[1]
        grown = []
        for k in range(self.q):
            g = _Entries(en.row, np.c_[en.term, en.term.max(axis=1) + 1], np.c_[en.param, np.full(len(en.row), k)],
                         np.c_[en.sel, np.zeros(len(en.row), int)], en.score)
            pick, score = self.slot_step(g, width, self.must_order(g))
            keep = score < en.score
            g.sel[:, width] = pick
            g.score = score
            grown.append(g.take(keep))
        return _Entries.concat(grown)

    def promising(self, en: "_Entries") -> "_Entries":
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
                rest = self.promising(_Entries.concat([rest, self.grow(rest)]).unique())
                self.refine(rest)
                rest = rest.unique()
                grown = self.grow(self.promising(rest))
                self.refine(grown)
                rest = _Entries.concat([rest, grown])
                still = ~self.fits_noise(self.best_per_row(rest)) & wide
                if still.any():
                    polished = self.best_per_row(rest.take(still[rest.row]), _POLISH)
                    self.polish(polished)
                    rest = _Entries.concat([rest, polished])
                first = _Entries.concat([first, rest])
            en = first
        self.pool = en.unique()  # every candidate the search reached (seeds the resamples' selection)
        out: list[Model | None] = [None] * self.m
        self.finish(self.best_per_row(en), out)
        return out  # type: ignore[return-value]

    def reselect(self, seed: "_Entries") -> list[Model]:
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
        pool = _Entries.concat([own, seed])
        best = self.best_per_row(pool)
        self.refine(best)
        out: list[Model | None] = [None] * self.m
        self.finish(best, out)
        return out  # type: ignore[return-value]

    def entry_scores(self, en: "_Entries") -> np.ndarray:
        """The criterion of every entry on this fit's data (inf where a coefficient that must be
        positive is not, or where there are not more points than coefficients)."""
        _, cols, used = self.columns(en)
        g, b = self.moments(en, cols, used)
        _, rss, ok = _solve(g, b, self.ywy[en.row], self.positive(used))
        k = used.sum(axis=1)
        return np.where(ok & (k < self.n), self.score(rss, k, self.ywy[en.row]), np.inf)

    @staticmethod
    def best_per_row(en: "_Entries", count: int = 1) -> "_Entries":
        """The ``count`` best entries of every call path."""
        order = np.lexsort((en.score, en.row))
        rows = en.row[order]
        start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        rank = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
        return en.take(order[rank < count])

    def fits_noise(self, en: "_Entries") -> np.ndarray:
        """Per call path (one entry each): whether the weighted RSS is within the 99 % chi-square
        bound of the noise the repetitions show (without repetitions: only an exact fit)."""
        _, cols, used = self.columns(en)
        g, b = self.moments(en, cols, used)
        _, rss, _ = _solve(g, b, self.ywy[en.row], False)
        return self.within_noise(en, rss, used)

    def within_noise(self, en: "_Entries", rss: np.ndarray, used: np.ndarray) -> np.ndarray:
        """:meth:`fits_noise` of entries whose weighted RSS (E,) and used columns (E, K) are known."""
        dof = np.maximum(self.n - used.sum(axis=1), 1)
        out = np.zeros(self.m, bool)
        out[en.row] = rss <= np.fmax(self.noise[en.row] * chi2.ppf(0.99, dof), EXACT * self.ywy[en.row])
        return out

    def finish(self, en: "_Entries", out: list) -> None:
        """Coefficients and statistics of the chosen models (exact residuals, leave-one-out)."""
        _, a, used = self.columns(en)  # (M, K, N)
        g, b = self.moments(en, a, used)
        beta, rss_w, _ = _solve(g, b, self.ywy[en.row], np.zeros_like(used))
        y, w = self.y[en.row], self.w[en.row]
        pred = np.einsum("mk,mkn->mn", beta, a)
        ginv = np.linalg.pinv(g)  # leave-one-out residuals from the hat matrix diagonal
        h = np.einsum("mkn,mkl,mln->mn", a * w[:, None, :], ginv, a)
        loo = (y - pred) / np.clip(1.0 - h, 1e-9, None)
        cv = np.mean(loo * loo * w, axis=1) if self.opts.weighting == "relative" else np.mean(loo * loo, axis=1)
        # terms (the constant too) that change no prediction by more than the fitting floor are
        # rounding residue of an exact fit (3.7e-12 + 2 * x^(3/2)): dropped
        size = np.abs(y) if self.opts.weighting == "relative" else np.max(np.abs(y), axis=1, keepdims=True)  # as weighted
        keep = np.max(np.abs(beta[:, :, None] * a) / size[:, None, :], axis=2) > _FLOOR
        keep &= np.arange(a.shape[1]) <= en.term.max(axis=1, initial=-1)[:, None] + 1
        keep[:, 0] |= ~keep[:, 1:].any(axis=1)
        coef = np.where(keep, beta, 0.0)
        # the statistics of all models at once, from their predictions as Model.predict computes them
        # (the constant, then each term's coefficient times its factors' product in parameter order)
        fitted = np.repeat(coef[:, :1], self.n, axis=1)
        for t in range(a.shape[1] - 1):
            values = np.ones((len(en.row), self.n))
            for k in range(self.q):
                e, slot = np.nonzero((en.term == t) & (en.param == k))
                values[e] *= self.values[k][en.sel[e, slot]]
            fitted += coef[:, t + 1, None] * values
        rss, r2, adj_r2, smape = statistics(y, fitted, keep[:, 1:].sum(axis=1))
        columns = keep.copy()
        columns[:, 0] = True
        factors = [[Factor(k, *pair) for pair in self.pairs[k]] for k in range(self.q)]
        term, param, sel, kept = en.term.tolist(), en.param.tolist(), en.sel.tolist(), keep.tolist()
        for i, r in enumerate(en.row.tolist()):
            parts: dict[int, list[tuple[int, int]]] = {}
            for t, k, p in zip(term[i], param[i], sel[i]):
                if t >= 0 and kept[i][t + 1]:
                    parts.setdefault(t, []).append((k, p))
            # a term's parameters are distinct: in parameter order its factors are sorted
            terms = [Term(tuple(factors[k][p] for k, p in sorted(parts[t]))) for t in sorted(parts)]
            out[r] = Model(self.names, terms, coef[i, columns[i]], points=self.x, values=self.y[r], cv_score=float(cv[i]),
                           rss=float(rss[i]), r2=float(r2[i]), adj_r2=float(adj_r2[i]), smape=float(smape[i]))
        self.plausible(en, out, self.within_noise(en, rss_w, used), adj_r2)
        self.resolve_exact(out)

    def resolve_exact(self, out: list) -> None:
        """Noise-free data that a model fits to within 1e-8 but not exactly: a term that changes the
        values by 1e-6 beside one a million times larger (b^(1/4) beside c^3 log2(c) at c = 500) is
        below what the normal equations resolve (and a term of that size may be spurious). There,
        by orthogonal least squares (SVD, 1e-16 accurate), up to one single-parameter term per
        parameter is added while one halves the residual, then terms are dropped while the fit stays
        exact; the result replaces the model only if it fits exactly."""
        singles = self.single_parameter_terms()
        single_values = np.array([t.values(self.x) for t in singles])  # (terms, points)
        for r, model in enumerate(out):
            if model is None or self.noise[r] > 1e-24:  # (identical repetitions: rounding, 1e-32)
                continue
            sw = np.sqrt(self.w[r])
            b = self.y[r] * sw
            exact, near = 1e-24 * np.sum(b * b), 1e-8 * np.sum(b * b)
            terms = list(model.terms)
            rss = _lstsq(self.x, terms, sw, b)[1]
            if not exact < rss < near:
                continue
            # every term's values times sw computed once per set (the same bits as each time)
            single_scaled = single_values * sw
            scaled = {id(t): (t, v) for t, v in zip(singles, single_scaled)}
            scaled.update({id(t): (t, t.values(self.x) * sw) for t in terms})
            lsq = partial(_lstsq, self.x, sw=sw, b=b, scaled=scaled)

            def best_in_slot(terms: list[Term], j: int) -> tuple[float, int]:
                """The least RSS with ``terms[j]`` (j == len(terms): a term added) replaced by each single
                term, all at once (:func:`_lstsq_stack`), among those the options allow; and its term."""
                cols = [sw] + [scaled[id(t)][1] for t in terms] + [sw] * (j == len(terms))
                a = np.repeat(np.column_stack(cols)[None], len(singles), axis=0)
                a[:, :, j + 1] = single_scaled  # (column 0: the constant's)
                coef, rss = _lstsq_stack(a, b)
                if self.opts.positive:
                    rss = np.where(np.all(coef[:, 1:] > 0, axis=1), rss, np.inf)
                k = int(np.argmin(rss))
                return float(rss[k]), k

            for _ in range(self.q):
                if len(terms) + 2 >= self.n or rss <= exact:
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
            if rss <= exact and (not self.opts.positive or np.all(coef[1:] > 0)):
                fitted = Model(self.names, terms, coef, points=self.x, values=self.y[r])
                fill_statistics(fitted, self.y[r], fitted.predict(self.x))
                out[r] = fitted

    def single_parameter_terms(self) -> list[Term]:
        return [Term((Factor(k, *pair),)) for k in range(self.q) for pair in self.pairs[k]]

    def single_terms(self) -> tuple[np.ndarray, list[tuple[int, ...]]]:
        """Every term of one or two factors (a pair of one parameter, or the product of pairs of two):
        their values (T, N) and the parameters of each block of them (one parameter: its pairs; two:
        every product of their pairs, the second parameter's pair varying fastest); :meth:`single_term`
        gives a term's factors."""
        values, blocks = [], []
        for k in range(self.q):
            values.append(self.values[k])
            blocks.append((k,))
        for k, l in itertools.combinations(range(self.q), 2):
            values.append((self.values[k][:, None, :] * self.values[l][None, :, :]).reshape(-1, self.n))
            blocks.append((k, l))
        return np.concatenate(values), blocks

    def single_term(self, index: int, blocks: list[tuple[int, ...]]) -> Term:
        """Term ``index`` of :meth:`single_terms` (built only for the terms that are used)."""
        for params in blocks:
            shape = [len(self.pairs[k]) for k in params]
            if index < np.prod(shape):
                picks = np.unravel_index(index, shape)
                return Term(tuple(sorted(Factor(k, *self.pairs[k][int(p)]) for k, p in zip(params, picks))))
            index -= int(np.prod(shape))
        raise IndexError(index)

    def best_product_of_three(self, yc: np.ndarray, syy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """R^2 of the best c0 + c1 a b c (one pair of each of the 3 parameters, c1 > 0 if positive)
        per row of the centred values ``yc`` (E, N), and its pair per parameter (E, 3). On a full
        grid the 74,088 products' moments separate into per-parameter sums (cheap); elsewhere they
        are computed over the points."""
        a, b, c = self.values
        u = [np.unique(self.x[:, k], return_inverse=True) for k in range(3)]
        full = len(np.unique(self.x, axis=0)) == self.n == np.prod([len(v) for v, _ in u])
        e = len(yc)
        if full:
            grid = np.zeros((e, *(len(v) for v, _ in u)))
            grid[:, u[0][1].ravel(), u[1][1].ravel(), u[2][1].ravel()] = yc
            av, bv, cv = (_term_values(v, self.pairs[k]) for k, (v, _) in enumerate(u))
            sty = np.einsum("muvw,iu->mivw", grid, av)
            sty = np.einsum("mivw,jv->mijw", sty, bv)
            sty = np.einsum("mijw,kw->mijk", sty, cv).reshape(e, -1)
            total = np.einsum("i,j,k->ijk", *((t * t).sum(axis=1) for t in (av, bv, cv))).ravel()
            mean = np.einsum("i,j,k->ijk", *(t.mean(axis=1) for t in (av, bv, cv))).ravel()
            stt = total - self.n * mean ** 2
        else:
            bank = (a[:, None, None, :] * b[None, :, None, :] * c[None, None, :, :]).reshape(-1, self.n)
            total = np.sum(bank * bank, axis=1)
            bank = bank - bank.mean(axis=1, keepdims=True)
            stt, sty = np.sum(bank * bank, axis=1), yc @ bank.T
        ok = (stt > 1e-12 * total)[None, :] & ((sty > 0) if self.opts.positive else True)
        r2 = np.where(ok, sty ** 2 / np.where(ok, stt[None, :] * np.maximum(syy, 1e-300)[:, None], 1.0), -np.inf)
        best = np.argmax(r2, axis=1)
        return r2[np.arange(e), best], np.column_stack(np.unravel_index(best, (len(a), len(b), len(c))))

    def plausible(self, en: "_Entries", out: list, fits: np.ndarray, adj_model: np.ndarray) -> None:
        """Where a chosen model neither fits within the noise the repetitions show nor explains as
        much of the variance (adjusted R^2) as the best model with a single term (of one or two
        factors; with 3 parameters also of three), least squares, coefficient positive, that model
        replaces it: relative weights can otherwise prefer a constant under data that rise from 478 to
        6448 with large scatter. ``fits``: :meth:`fits_noise` of the entries, ``adj_model``: their
        models' adjusted R^2 (E,)."""
        if self.n <= 3:
            return
        y = self.y[en.row]
        yc = y - y.mean(axis=1, keepdims=True)
        syy = np.sum(yc * yc, axis=1)
        if not np.any(syy > 0):
            return
        bank, blocks = self.single_terms()
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
        ok = usable[None, :] & ((sty > 0) if self.opts.positive else True)
        r2 = np.where(ok, sty ** 2 / np.where(ok, stt[None, :] * np.maximum(syy[need], 1e-300)[:, None], 1.0), -np.inf)
        best = np.argmax(r2, axis=1)
        r2_best = np.maximum(r2[np.arange(len(best)), best], 0.0)  # at worst the constant (the mean)
        three: dict[int, Term] = {}  # where a product of all three parameters is the best single term
        if self.q == 3:  # products of all three parameters too, where one could replace the model
            r2_three, pick = np.full(len(need), -np.inf), np.zeros((len(need), 3), int)
            three_need = np.flatnonzero(~fit_well[need])
            for part in np.array_split(three_need, max(1, len(three_need) // 32)) if len(three_need) else []:
                r2_three[part], pick[part] = self.best_product_of_three(yc[need[part]], syy[need[part]])
            for j in np.flatnonzero(r2_three > r2_best):
                r2_best[j] = r2_three[j]
                three[j] = Term(tuple(Factor(k, *self.pairs[k][pick[j, k]]) for k in range(3)))
        adj = 1 - (1 - r2_best) * (self.n - 1) / (self.n - 2)
        for j in np.flatnonzero(adj_model[need] < adj - np.where(fits[en.row[need]], _R2_SLACK, 0.0)):
            i, r = need[j], en.row[need[j]]
            term = three[j] if j in three else self.single_term(int(best[j]), blocks)
            tv = term.values(self.x) if r2_best[j] > 0 else None
            if tv is not None:
                slope = np.sum((tv - tv.mean()) * yc[i]) / np.sum((tv - tv.mean()) ** 2)
                model = Model(self.names, [term], np.array([y[i].mean() - slope * tv.mean(), slope]),
                              points=self.x, values=self.y[r])
            else:
                model = Model(self.names, [], np.array([y[i].mean()]), points=self.x, values=self.y[r])
            # leave-one-out score as finish() gives the others (weighted as the options weight): the
            # hat matrix diagonal of the least-squares line in tv (of the mean alone: 1/N)
            h = np.full(self.n, 1.0 / self.n)
            if tv is not None:
                h = h + (tv - tv.mean()) ** 2 / np.sum((tv - tv.mean()) ** 2)
            loo = (y[i] - model.predict(self.x)) / np.clip(1.0 - h, 1e-9, None)
            model.cv_score = float(np.mean(loo * loo * (self.w[r] if self.opts.weighting == "relative" else 1.0)))
            fill_statistics(model, y[i], model.predict(self.x))
            out[r] = model


@dataclass
class _Entries:
    """Candidate models of all call paths in one padded layout, so that a refinement step over all
    of them costs the same few array operations whatever their structures: slot l of entry e is a
    factor of parameter ``param[e, l]`` with pair index ``sel[e, l]`` in term ``term[e, l]`` (-1:
    unused); ``row[e]`` is the call path, ``score[e]`` the criterion."""

    row: np.ndarray
    term: np.ndarray
    param: np.ndarray
    sel: np.ndarray
    score: np.ndarray

    def unique(self) -> "_Entries":
        """Without repeated candidates (the same model of the same call path)."""
        key = np.column_stack([self.row, self.term, self.param, np.where(self.term >= 0, self.sel, 0)])
        return self.take(np.sort(np.unique(key, axis=0, return_index=True)[1]))

    def take(self, index) -> "_Entries":
        return _Entries(self.row[index], self.term[index], self.param[index], self.sel[index], self.score[index])

    @staticmethod
    def concat(parts: list["_Entries"]) -> "_Entries":
        width = max(p.sel.shape[1] for p in parts)

        def pad(a, fill):
            return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill)

        return _Entries(np.concatenate([p.row for p in parts]), np.concatenate([pad(p.term, -1) for p in parts]),
                        np.concatenate([pad(p.param, -1) for p in parts]), np.concatenate([pad(p.sel, 0) for p in parts]),
                        np.concatenate([p.score for p in parts]))


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
