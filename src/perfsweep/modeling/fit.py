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
(steps 2-4 once per set, not once per resample; Search.reselect). The reported model is then the one
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

The modules of the modeler, each of one role:

- fit (this module): the entry points fit_model and fit_models; a batch's sets grouped by weighting;
- fit_input: the options (FitOptions) and the input, checked, scaled, their means and noise (Sets);
- fit_core: a batch's data and the least squares of candidate models (Fit, Entries, solve);
- fit_search: the search over hypotheses, steps 1-4 (Search: models, reselect);
- fit_stats: the chosen models' coefficients and statistics, and step 5 (finish, plausible);
- fit_exact: the exact-fit shortcut for noise-free data (resolve_exact);
- fit_resample: the resampling and drift rounds (Rounds, resampled_means, resample_models).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from functools import lru_cache, partial
from typing import Sequence

import numpy as np

from perfsweep.errors import ModelingError
from perfsweep.modeling.fit_core import CHUNK
from perfsweep.modeling.fit_input import MIN_VALUES, FewValuesWarning, FitOptions, Sets, check_points, check_values
from perfsweep.modeling.fit_resample import Rounds
from perfsweep.modeling.fit_search import Search
from perfsweep.modeling.model import Model, fill_statistics
from perfsweep.modeling.terms import exponent_pairs

__all__ = ["MIN_VALUES", "FewValuesWarning", "FitOptions", "ModelingWarning", "fit_model", "fit_models"]


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
    x, names = check_points(x, param_names, {name: len(p) + 1 for name, p in assumed.items()})
    out: list[Model | None] = [None] * len(ys)
    batch = Sets(ys, len(x), opts)
    groups = _groups(batch, ys, x, names, strict, out)
    pairs = [tuple(assumed[name]) if name in assumed else
             _pairs(opts.negative_exponents or name in opts.negative_params, name not in opts.power_params)
             for name in names]
    amdahl = tuple(k for k, name in enumerate(names) if any(i < 0 for i, _ in assumed.get(name, ())))
    for (weighting, positive), sets in groups.items():
        index = [i for i, _, _ in sets]
        final = _fit_group(x, batch.ybar[index], batch.noise[index], [c for _, c, _ in sets], names, pairs,
                           replace(opts, weighting=weighting, positive=positive), index, amdahl)
        for j, (i, _, scale) in enumerate(sets):
            out[i] = _rescaled(final[j], scale)
    return out


def _groups(batch: Sets, ys, x, names, strict: bool, out: list) -> dict[tuple[str, bool], list]:
    """The sets of ``batch`` that get a search, by the weighting and sign rule of their fit: (index,
    scaled values, scale) each. A set that cannot be modelled raises ModelingError (``strict``) or
    warns; a set of zeros gets the model 0 in ``out``."""
    groups: dict[tuple[str, bool], list[tuple[int, np.ndarray, float]]] = {}
    for i in range(len(ys)):
        if i in batch.bad:
            try:
                check_values(ys[i], len(x))  # the set's error
            except ModelingError as exc:
                if strict:
                    raise
                warnings.warn(f"measurement set {i}: {exc}", ModelingWarning, stacklevel=4)
            continue
        if batch.scale[i] == 0:
            out[i] = _zero_model(names, x, batch.ybar[i])
            continue
        groups.setdefault(batch.kind[i], []).append((i, batch.scaled[i], float(batch.scale[i])))
    return groups


def _fit_group(x, ybar, noise, reps, names, pairs, opts: FitOptions, index, amdahl) -> list[Model]:
    """The models of one group's sets (means ``ybar``, repetitions ``reps``; one weighting and sign
    rule: ``opts``), searched CHUNK sets at a time (fit_search.Search), then with ``opts.bootstrap``
    chosen by the resampling rounds (fit_resample.Rounds), whose searches the candidates the search of
    each set reached seed; ``index``: the sets' places in the batch (each draws its resamples from its own
    stream: fit_resample.Rounds)."""
    fitter = partial(Search, x, names=names, pairs=pairs, opts=opts)
    models: list[Model] = []
    pools = []  # per set: the candidates its search reached (rows: the set's index)
    for start in range(0, len(ybar), CHUNK):
        stop = min(start + CHUNK, len(ybar))
        fit = fitter(ybar[start:stop], noise[start:stop])
        models += fit.models()
        if x.shape[1] > 1 and opts.bootstrap:
            pool = replace(fit.pool, row=fit.pool.row + start)
            pools += [pool.take(pool.row == j) for j in range(start, start + fit.m)]
    return Rounds(fitter, x, reps, ybar, noise, models, pools, opts, index, amdahl).chosen()


def _zero_model(names, x, ybar) -> Model:
    model = Model(list(names), [], np.zeros(1), points=x, values=ybar, cv_score=0.0)
    fill_statistics(model, ybar, np.zeros_like(ybar))
    return model


def _rescaled(model: Model, scale: float) -> Model:
    """The model of scaled values back in the units of the measurements."""
    model.coefficients = model.coefficients * scale
    model.values = model.values * scale
    for b in (*model.bootstrap, *model.alternatives):
        b.coefficients = b.coefficients * scale
    if not model.scatter_relative:
        model.scatter *= scale
    with np.errstate(over="ignore"):
        model.rss *= scale * scale
    return model


@lru_cache(maxsize=8)
def _pairs(negative: bool, logs: bool = True) -> tuple:
    return tuple(exponent_pairs(negative, logs))
