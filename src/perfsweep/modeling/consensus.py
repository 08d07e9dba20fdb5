"""The reported model: a form that the resampled data agree with, fitted to the measured data.

    chosen = consensus(model, searched, x, ybar, draws, w, penalty)

One selection over one sweep's data picks the form whose criterion is lowest; with 12-20 points of
2 repetitions and the noise of a shared host, a second sweep of the same grid picked another form in
each of the default config's four studies, and the resamples of one sweep agreed with its own lead
order in 2.5-33 % (issue 35). Bagging of model selection (Breiman 1996) and stability selection
(Meinshausen and Bühlmann 2010) judge a form by how often resampled data choose it. So:

1. the *pool*: every form that the search chose for the measured means or for one of the resamples
   (``searched``); each also with its exponents rounded to quarters, with and without its log2
   factors (n, n^(5/4) and n^(3/4) log2(n) fit n = 400-2000 alike and part by 14-30 % at 6000: the
   data do not tell which, the simpler form is the one to say), and, where two process counts leave
   the form in p assumed p^-1, with a serial part beside the parallel one (_amdahl). Every form is
   fitted again to every data set (weighted least squares, one solve per form for all resamples);
2. a fit is *admissible* where its term coefficients are positive (each term a cost) and, with
   positive values, its constant is not below -``NEGATIVE`` of the smallest mean (a constant of
   -4.67 s under runs of 0.5-2 s is the terms' growth cancelled, not a cost);
3. every resample chooses its admissible form of the lowest criterion (the search's: N ln(RSS_w / N)
   + penalty K); with the config's ``modeling: {simplest_within: k}`` every data set, the measured
   means too, chooses the simplest admissible form (as in 5.) within k coefficients' penalties of its
   lowest (bench/simplest_within.py: with k = 1 the resamples agree more often, the sweeps' forms
   differ less, the intervals cover a little less; 0 unless a config sets it);
4. the lead order to report: the measured data's own choice where at least ``STABLE`` of the
   resamples' choices grow alike with it (lead_orders.grow_alike over the measured range: the same
   dominant parameters, growth within 1/4 of a power); else the lead order at the centre of the
   resamples' choices (the admissible form whose lead order is closest to theirs on average,
   lead_orders.order_distance). This closeness chooses the form as before issue 44, so the reported
   models did not change with the stricter lead-order rule; a majority vote over the resamples' lead
   terms by that rule, tried instead, moved the choice among forms that grow alike (a synthetic
   linear T(n) came out n^(2/3) log2(n)^2 in place of n log2(n)), and perfsweep compare lost a 20 %
   regression against three baselines;
5. of the forms of that lead order the simplest (Amdahl's law first where it applies, then fewest
   terms, log2 factors and exponents' denominators) within one coefficient's penalty of their best:
   the simplest model within the noise of the best.

The reported model's ``lead_share`` is the share of the resamples' choices that agree with its lead
order, ``runner_up`` the most frequent lead among those that do not; its resampled models
(``bootstrap``, for the intervals) are the resamples' choices, so that the intervals carry the
uncertainty of choosing the form; its ``extrapolation`` says per parameter how much its predictions
beyond the measured range depend on the points it has (extrapolation_errors), which widens the
intervals there; its ``alternatives`` are the other admissible forms within ``PLAUSIBLE`` of the best
criterion, fitted to the measured means (Model.form_spread averages over them).

Measured on synthetic replicate sweeps with this machine's noise (tests/test_model_stability.py):
three sweeps of an ljmd-like T(n, m) agreed in lead order in 8 of 12 triples by the rule before issue
44 (growth within 1/4 of a power; by the same lead terms in 0: the law's power of m lies between
neighbouring forms), the lead shares had a median of 1.0 (by the same lead terms 0.45: undecided, as
the form is), their predictions at 2-3x the largest n lay apart by a median of 14 %, and at 2-3x the largest n the models erred by 7 % (median) with 97 % of the 90 % intervals
covering; on three sweeps of the default config (2026-11-26, an idle 2-core machine) 11 of its 12
validation points at 2.5x the largest n or frames fell within the 90 % intervals.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from perfsweep.modeling.lead_orders import grow_alike, lead_orders, lead_terms, order_distances, same_lead_order
from perfsweep.modeling.model import Model, fill_statistics
from perfsweep.modeling.terms import EXACT, Factor, Term

NEGATIVE = 0.05  # a constant below -5 % of the smallest mean is not admissible (values > 0)
STABLE = 0.8  # the measured data's own choice stands where this share of the resamples agree with it
MIN_HELD = 4  # values of a parameter for its extrapolation error (3 left to fit the form without the largest)
PLAUSIBLE = 30.0  # forms whose criterion is above the best's by more weigh exp(-15 / temperature) or less
ALTERNATIVES = 12  # at most this many other forms are kept (models.json's alternatives)
_RELEVANT = 1e-6  # a term changing no value by more than this fraction of the largest is no term


def _form(model: Model) -> tuple[Term, ...]:
    return tuple(sorted(model.terms))


def _simplified(terms: list[Term], logs: bool) -> tuple[Term, ...]:
    """The form with its exponents rounded to the nearest quarter and, unless ``logs``, its log2 factors
    dropped (n^(4/3) log2(n) -> n^(5/4)): within the noise the simpler form."""
    out = set()
    for t in terms:
        factors = tuple(Factor(f.param, Fraction(round(4 * f.i), 4), f.j if logs else 0) for f in t.factors)
        factors = tuple(f for f in factors if f.i != 0 or f.j != 0)
        if factors:
            out.add(Term(factors))
    return tuple(sorted(out))


def _amdahl(form: tuple[Term, ...], params: tuple[int, ...]) -> list[tuple[Term, ...]]:
    """With two process counts (form in p assumed p^-1) T(n, p) is identified only as S(n) + P(n)/p,
    Amdahl's law with a serial part S that may grow with n (ljmd integrates every molecule on every
    rank). For each term P(n) p^-1 of ``form`` without a serial part: the form with the serial part
    P(n) beside it (a single product n^(3/2) / p otherwise bends to mimic what n + n / p is)."""
    if not params or _serial_and_parallel(form, params):
        return []
    out = []
    for t in form:
        rest = tuple(f for f in t.factors if f.param not in params)
        if rest and len(rest) < len(t.factors):
            out.append(tuple(sorted({*form, Term(rest)})))
    return out


def _serial_and_parallel(form: tuple[Term, ...], params: tuple[int, ...]) -> bool:
    """Whether a form has a term in the ``params`` (p^-1) and a term of the others without them."""
    if not params:
        return True
    has = [any(f.param in params for f in t.factors) for t in form]
    return any(has) and any(not h for h in has)


def _complexity(form: tuple[Term, ...]) -> tuple[int, int, int]:
    """Terms, log2 factors, then the exponents' denominators: the order of simplicity."""
    factors = [f for t in form for f in t.factors]
    return len(form), sum(f.j for f in factors), sum(Fraction(f.i).denominator for f in factors)


def form_design(x: np.ndarray, terms: tuple[Term, ...]) -> np.ndarray:
    """The design matrix of a form at the points ``x``: the constant's column, then each term's values."""
    return np.column_stack([np.ones(len(x))] + [t.values(x) for t in terms])


def fit_form(a: np.ndarray, y: np.ndarray, w: np.ndarray, positive: bool) -> np.ndarray:
    """Weighted least squares of one data set, term coefficients >= 0 if ``positive``."""
    sw = np.sqrt(w)
    aw, b = a * sw[:, None], y * sw
    coef = np.linalg.lstsq(aw, b, rcond=None)[0]
    if positive and a.shape[1] > 1 and np.any(coef[1:] <= 0):
        from scipy.optimize import lsq_linear  # here: scipy.optimize takes a second to import

        scale = np.maximum(np.sqrt(np.sum(aw * aw, axis=0)), 1e-300)
        lower = np.r_[-np.inf, np.zeros(a.shape[1] - 1)]
        coef = lsq_linear(aw / scale, b, bounds=(lower, np.full(a.shape[1], np.inf))).x / scale
    return coef


def _loo(a: np.ndarray, w: np.ndarray, y: np.ndarray, pred: np.ndarray, relative: bool) -> float:
    """Leave-one-out mean squared (weighted) error from the hat matrix's diagonal."""
    aw = a * w[:, None]
    h = np.einsum("nk,kl,nl->n", aw, np.linalg.pinv(a.T @ aw), a)
    loo = (y - pred) / np.clip(1.0 - h, 1e-9, None)
    return float(np.mean(loo * loo * (w if relative else 1.0)))


def extrapolation_errors(x: np.ndarray, ybar: np.ndarray, w: np.ndarray, form: tuple[Term, ...],
                         names: list[str], positive: bool = True) -> dict[str, float]:
    """How much the form's extrapolation depends on the data it has, per parameter: the form fitted
    again without the points at the parameter's largest value predicts them, and the root mean square
    of its log departure there from the form fitted to all points, per unit of log2 distance from the
    largest value left to the one held out, is that parameter's error per doubling (Model.interval
    widens by it with the distance beyond the measured range). The resamples of the measured points do
    not show this: on the default sweep's T(n, m, c) all resampled models agreed, their 90 % intervals
    at 2.5x the largest n were +-8 %, and the models erred there by 10-17 %. Only parameters with at
    least MIN_HELD values (the fit without the largest keeps three)."""
    out: dict[str, float] = {}
    a = form_design(x, form)
    full = a @ fit_form(a, ybar, w, positive)
    if np.any(full <= 0):
        return out
    for k, name in enumerate(names):
        values = np.unique(x[:, k])
        held = x[:, k] == values[-1]
        if len(values) < MIN_HELD or int((~held).sum()) <= len(form) + 1:
            continue
        coef = fit_form(a[~held], ybar[~held], w[~held], positive)
        pred = a[held] @ coef
        if np.any(pred <= 0):
            continue
        error = np.sqrt(np.mean(np.log(pred / full[held]) ** 2))
        out[name] = float(error / np.log2(values[-1] / values[-2]))
    return out


def _alternatives(forms: list, coefs: list, scores: np.ndarray, usable: np.ndarray, pick: int,
                  names: list[str]) -> tuple[float, list[Model]]:
    """The picked form's criterion above the best admissible form's, and the other admissible forms
    within ``PLAUSIBLE`` of the best (at most ``ALTERNATIVES``, the best first), each fitted to the
    measured means with its criterion above the best: the forms Model.form_spread averages over."""
    best = float(np.min(scores[usable]))
    order = sorted((f for f in usable if f != pick and scores[f] - best <= PLAUSIBLE), key=lambda f: scores[f])
    out = [Model(names, list(forms[f]), coefs[f][:, 0].copy(), criterion=float(scores[f] - best))
           for f in order[:ALTERNATIVES]]
    return float(scores[pick] - best), out


def _centre(forms: list, growths: list[dict], scores: np.ndarray, usable: np.ndarray, picked: np.ndarray,
            own: int, ranges: dict) -> int:
    """The lead order at the centre of the resamples' choices ``picked``: the admissible form whose lead
    order is closest to theirs on average (growth over the measured range, lead_orders.order_distance),
    or the measured data's ``own`` choice where the resamples' choices grow alike with it (STABLE). The
    choices are few forms, each chosen many times: a mean over them is one over those forms, each
    weighed by how often it was chosen."""
    chosen, times = np.unique(picked, return_counts=True)
    apart = order_distances([growths[f] for f in usable], [growths[c] for c in chosen], ranges)
    distance = dict(zip(usable, apart @ times / len(picked)))
    alike = np.dot(times, [grow_alike(growths[own], growths[c], ranges) for c in chosen]) / len(picked)
    if alike >= STABLE:
        return own
    return min(usable, key=lambda f: (distance[f], _complexity(forms[f]), scores[f, 0]))


def consensus(model: Model, searched: list[Model], x: np.ndarray, ybar: np.ndarray, draws: np.ndarray,
              w: np.ndarray, penalty: float, positive: bool = True, relative: bool = True,
              amdahl: tuple[int, ...] = (), simplest_within: float = 0.0) -> Model:
    """The model to report for the means ``ybar`` at ``x`` (weights ``w``), given the search's own
    ``model``, the models it chose for the resampled means ``draws`` (B x N), ``searched``; see the
    module's rule. Without resamples the search's model. ``amdahl``: the parameters (indices) whose
    form is taken as p^-1 (two process counts): the forms of Amdahl's law come first, a serial part
    beside the part divided among the ranks (see _amdahl). ``simplest_within`` > 0: every data set
    chooses the simplest admissible form within that many ``penalty``s of its best (_choose)."""
    if not len(draws):
        return model
    n = len(ybar)
    floor = -NEGATIVE * float(np.min(ybar)) if positive and np.all(ybar > 0) else -np.inf
    forms: list[tuple[Term, ...]] = []
    for m in (model, *searched):
        for base in (_form(m), _simplified(m.terms, True), _simplified(m.terms, False)):
            for form in (base, *_amdahl(base, amdahl)):
                if form not in forms and len(form) + 1 < n:
                    forms.append(form)
    data = np.vstack([ybar, draws])  # row 0: the measured means
    sw = np.sqrt(w)
    ywy = np.sum(w * data * data, axis=1)
    scores = np.full((len(forms), len(data)), np.inf)
    coefs: list[np.ndarray] = []
    for f, form in enumerate(forms):
        a = form_design(x, form)
        coef = np.linalg.lstsq(a * sw[:, None], (data * sw).T, rcond=None)[0]  # (K, sets)
        coef[:, 0] = fit_form(a, ybar, w, positive)  # the measured means: constrained where needed
        fitted = (a @ coef).T
        rss = np.sum(w * (data - fitted) ** 2, axis=1)
        # a term is there where it changes the values by more than rounding (lsq_linear leaves 1e-23)
        size = np.max(np.abs(a[None, :, 1:] * coef.T[:, None, 1:]), axis=1) / np.max(np.abs(data), axis=1)[:, None]
        ok = (coef[0] >= floor) & (np.all((coef[1:] > 0).T & (size > _RELEVANT), axis=1) if positive else True)
        scores[f] = np.where(ok, n * np.log(np.maximum(rss, EXACT * ywy) / n) + penalty * a.shape[1], np.inf)
        coefs.append(coef)
    # every resample chooses the admissible form of the lowest criterion (or the simplest near it)
    simplicity = [(not _serial_and_parallel(form, amdahl), _complexity(form)) for form in forms]
    choice = np.array([_choose(scores[:, 1 + b], simplicity, simplest_within * penalty) for b in range(len(draws))])
    chose = np.isfinite(scores[choice, 1 + np.arange(len(draws))])
    usable = np.flatnonzero(np.isfinite(scores[:, 0]))
    ranges = {name: (float(x[:, k].min()), float(x[:, k].max())) for k, name in enumerate(model.param_names)}
    if not chose.any() or not len(usable):  # nothing admissible: the search's model, with its resamples
        model.bootstrap = list(searched[1:])
        model.lead_share = float(np.mean([same_lead_order(model, b) for b in model.bootstrap]))
        return model
    names = list(model.param_names)
    growths = [lead_orders(Model(names, list(form), np.zeros(len(form) + 1))) for form in forms]
    picked = choice[chose]
    own = _choose(scores[:, 0], simplicity, simplest_within * penalty)  # the measured data's own choice
    centre = _centre(forms, growths, scores, usable, picked, own, ranges)
    # of the forms of that lead order the simplest within one coefficient's penalty of their best
    same = np.array([growths[f] == growths[centre] for f in range(len(forms))]) & np.isfinite(scores[:, 0])
    pick = _choose(np.where(same, scores[:, 0], np.inf), simplicity, penalty)
    # the lead share by the one lead-order rule: the resamples' choices with the same lead terms
    lead = lead_terms(Model(names, list(forms[pick]), np.zeros(len(forms[pick]) + 1)))
    leads = {c: lead_terms(Model(names, list(forms[c]), np.zeros(len(forms[c]) + 1))) for c in set(picked.tolist())}
    agree = np.array([leads[c] == lead for c in picked])
    a = form_design(x, forms[pick])
    chosen = Model(names, list(forms[pick]), coefs[pick][:, 0].copy(), points=x, values=ybar,
                   processes=model.processes)
    pred = chosen.predict(x)
    chosen.cv_score = _loo(a, w, ybar, pred, relative)
    fill_statistics(chosen, ybar, pred)
    if positive and np.all(ybar > 0):
        chosen.extrapolation = extrapolation_errors(x, ybar, w, forms[pick], names, positive)
    chosen.bootstrap = [Model(names, list(forms[c]), coefs[c][:, 1 + b].copy())
                        for b, c in zip(np.flatnonzero(chose), picked)]
    chosen.lead_share = float(agree.mean())
    chosen.criterion, chosen.alternatives = _alternatives(forms, coefs, scores[:, 0], usable, pick, names)
    chosen.runner_up, chosen.runner_up_share = _runner_up([forms[c] for c in picked[~agree]], names, len(picked))
    return chosen


def _choose(scores: np.ndarray, simplicity: list, margin: float) -> int:
    """The form one data set chooses by its criteria ``scores`` (inf: not admissible): the lowest, or with
    ``margin`` > 0 the simplest (``simplicity``: Amdahl's law first, then _complexity) whose criterion is
    within ``margin`` of the lowest, the lower criterion between equally simple ones."""
    best = int(np.argmin(scores))
    if margin <= 0 or not np.isfinite(scores[best]):
        return best
    near = np.flatnonzero(scores <= scores[best] + margin)
    return int(min(near, key=lambda f: (simplicity[f], scores[f], f)))


def _runner_up(rejected: list, names: list[str], total: int) -> tuple[str, float]:
    """The most frequent lead among the resamples' choices of another lead order, and its share."""
    others: dict[str, int] = {}
    for form in rejected:
        lead = Model(names, list(form), np.zeros(len(form) + 1)).lead()
        others[lead] = others.get(lead, 0) + 1
    if not others:
        return "", float("nan")
    lead, count = min(others.items(), key=lambda kv: (-kv[1], kv[0]))
    return lead, count / total
