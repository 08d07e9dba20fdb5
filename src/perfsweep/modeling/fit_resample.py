"""The resampling rounds: how sure a model's form is, and the drift between configurations.

With ``FitOptions.bootstrap`` the repetitions of every point are resampled (resampled_means) and every
resample modelled anew (resample_models); the reported model is the one the resamples agree with
(modeling.consensus: Model.lead_share, .interval). Rounds does this in rounds: the first resamples the
repetitions alone; the next also moves every point's mean by the scatter that the first round's model
leaves beyond the repetitions' noise (_scatter, _excess, at most the means' own _spread): the host's
drift between configurations measured at different times, which one configuration's repetitions do
not show (on the 2-core test machines the same point measured 3.48 s and 3.00 s half an hour apart),
and what the PMNF forms miss of the law (ljmd's power of m lies between m^2 and m^(8/3)).

The two are told apart where the records say what the host did (FitOptions.drift, from the aggregate:
perfsweep.modeling.pipeline.drift_points). A quiet host's configurations are measured in rounds, their
repetitions at different times, so their repetitions show its drift, and the scatter beyond is the
form's: a sweep measured again has it too. In three default sweeps one after another on an idle
2-core machine (bench/results/replicates/f301cd1-quiet/output_again.txt) the medians of the same
configurations lay apart between the sweeps by 0.9-1.3 % (per study), about as much as their
repetitions say (standard error 1.0-1.2 %; in the three of 0aeb32f, bench/results/replicates/0aeb32f-quiet,
1.2-1.7 % against 0.7-1.0 %), while the models left 1.2-4.2 % around them; on a busy host the
disturbed configurations' medians by 4.0-5.4 % against 2.2-2.4 % (replicates/f301cd1-busy, T(n, p) and
T(frames, p)). Moving the quiet points by the form's scatter asked of the resamples what no new
measurement would change: lead shares of 0.03-0.70 in 10 of the 12 quiet study-sweeps, and measuring
until decided spent its whole budget without raising them. So where some points are known quiet:

- the form and its lead share (would measuring again choose it?) come from a round that moves only the
  other points (disturbed, or of an unknown host), or from the first round where there are none;
- the intervals' resamples (Model.bootstrap: where may a new measurement fall?) from the round that
  moves every point, for what the forms miss holds beyond the grid too.

With no point known quiet (an aggregate without host load, a synthetic suite) both are the round that
moves every point, as before. Where every point is known quiet the model says so (Model.quiet): the
scatter beyond the repetitions is then the form's misfit alone, which the intervals' resamples, the
scatter and the extrapolation error each estimate, and Model.interval takes the largest of them in
place of their sum.

The resamples are modelled by a ``fitter`` the caller passes (perfsweep.modeling.fit passes
fit_search.Search over the batch's points), so that this module needs only its two calls: models()
and reselect(seed).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perfsweep.modeling.consensus import consensus
from perfsweep.modeling.fit_core import CHUNK, Entries
from perfsweep.modeling.model import Model


class Rounds:
    """The resampling rounds of one group of measurement sets (of one weighting and sign rule)."""

    def __init__(self, fitter, x, reps: list, ybar: np.ndarray, noise: np.ndarray, models: list[Model],
                 pools: list[Entries], opts, index: list[int], amdahl: tuple[int, ...]):
        """``fitter(ybar, noise)``: the search over the points ``x`` of means ``ybar`` (M x N); ``reps``:
        every set's (scaled) repetitions, N x R; ``ybar``, ``noise``: its means and noise; ``models``:
        the search's models of them; ``pools``: per set the candidates that search reached (several
        parameters; else empty); ``opts``: the group's FitOptions; ``index``: each set's place in the
        batch (its resamples' stream: :meth:`stream`); ``amdahl``: the parameters whose form is assumed
        with a negative exponent (consensus)."""
        self.fitter, self.x, self.reps, self.ybar, self.noise = fitter, x, reps, ybar, noise
        self.models, self.pools, self.opts, self.index, self.amdahl = models, pools, opts, index, amdahl
        self.relative = opts.weighting == "relative"
        self.w = [1.0 / y ** 2 if self.relative else np.ones_like(y) for y in ybar]

    def chosen(self) -> list[Model]:
        """Every set's reported model, with the scatter that widens its intervals where it has
        resamples. The scatter a model leaves beyond the repetitions' noise (the host's drift between
        configurations, what the form misses) is known only from a model that the resamples chose: a
        first round over the repetitions alone, then the round that also carries that scatter, and where
        some points are known quiet (FitOptions.drift) the form's from a round that moves only the others
        (see the module)."""
        ybar, noise, relative = self.ybar, self.noise, self.relative
        final, scatter = self.models, [None] * len(self.models)
        if self.opts.bootstrap:
            first = self.choose([0.0] * len(self.models), self.models)
            scatter = [_scatter(m, ybar[j], noise[j], relative) for j, m in enumerate(first)]
            excess = [min(_excess(s, noise[j]), _spread(ybar[j], relative)) for j, s in enumerate(scatter)]
            final = first
            if any(e > 0 for e in excess):
                wide, drift, scatter = self.choose(excess, first), self.opts.drift, [None] * len(self.models)
                if drift is None or all(drift):
                    final = wide
                else:  # the form and its lead share: only the host's points moved; the intervals: every point
                    final = self.choose(excess, first, drift) if any(drift) else first
                    for chosen, moved in zip(final, wide):
                        if chosen.bootstrap and moved.bootstrap:
                            chosen.bootstrap = moved.bootstrap
        quiet = self.opts.drift is not None and not any(self.opts.drift)
        for j, chosen in enumerate(final):
            if chosen.bootstrap:  # the scatter widens the intervals, which need resamples
                s = scatter[j] if scatter[j] is not None else _scatter(chosen, ybar[j], noise[j], relative)
                chosen.scatter, chosen.scatter_relative, chosen.quiet = s, relative, quiet
        return final

    def stream(self, j: int) -> np.random.Generator:
        """The random stream of set ``j``'s resamples: from the seed and the set's place in the batch alone,
        the same in every round. So the k-th resample of a set draws the same repetitions (by their
        index: the round that measured them) as the k-th resample of the same set of another batch of
        the same shape (the variants of a paired measurement, config key ``variants:``, are fitted on
        matching rounds), and the second round differs from the first by its excess alone."""
        return np.random.default_rng([self.opts.seed, self.index[j]])

    def choose(self, excess: list[float], known: list[Model], drift: tuple[bool, ...] | None = None) -> list[Model]:
        """Every set's reported model (consensus) over resamples whose means stray by ``excess`` more (with
        ``drift``, a flag per point: those points' means only); the forms of ``known`` (a first round's
        choices) are candidates too."""
        draws, owner = [], []
        for j, c in enumerate(self.reps):
            if self.opts.bootstrap and np.max(np.sum(~np.isnan(c), axis=1)) >= 2:
                draws.append(resampled_means(c, self.opts.bootstrap, self.stream(j), excess[j], self.relative, drift))
                owner += [j] * self.opts.bootstrap
        if not draws:
            return self.models
        owner_arr = np.array(owner, int)
        means = np.concatenate(draws)
        resampled = resample_models(self.fitter, means, self.noise[owner_arr], owner_arr, self.pools)
        pen = self.opts.penalty * np.log(len(self.x))
        out = []
        for j, model in enumerate(self.models):
            mine = np.flatnonzero(owner_arr == j)
            out.append(consensus(model, [known[j], *(resampled[b] for b in mine)], self.x, self.ybar[j], means[mine],
                                 self.w[j], pen, self.opts.positive, self.relative, self.amdahl,
                                 self.opts.simplest_within))
        return out


def resample_models(fitter, ybar, noise, owner, pools) -> list[Model]:
    """The models of the resamples (rows of ``ybar``; ``owner``: the set each was drawn from), by
    ``fitter(ybar, noise)`` (Rounds). One parameter: the whole search, which is cheap. Several: the
    search is seeded with the candidates the search of the owner's original data reached (``pools``;
    Search.reselect): the default config's models stage took 8.3 s CPU with the whole search per
    resample, 3.0 s so."""
    models: list[Model] = []
    for start in range(0, len(ybar), CHUNK):
        fit = fitter(ybar[start:start + CHUNK], noise[start:start + CHUNK])
        if not pools:
            models += fit.models()
            continue
        parts = [replace(pools[j], row=np.full(len(pools[j].row), r)) for r, j in enumerate(owner[start:start + CHUNK])]
        models += fit.reselect(Entries.concat(parts))
    return models


def resampled_means(y: np.ndarray, count: int, rng, excess: float = 0.0, relative: bool = True,
                    drift=None) -> np.ndarray:
    """(count, N) means of the repetitions of every point drawn with replacement. The deviations
    from the point's mean are widened by sqrt(r / (r - 1)): the plain bootstrap's variance of a mean
    of r values is (r - 1) / r of the true one (a 5-repetition bootstrap interval would be too short);
    with ``relative`` the widening is of the ratio to the mean (a positive value stays positive).
    Every drawn mean then strays by ``excess`` more (a fraction of the value with ``relative``, else
    in the values' unit), independently per point: the scatter between configurations that the
    repetitions of one round do not show; with ``drift`` (a flag per point) only the flagged points'
    means (the others' draws are made and not used: every point's stream stays the same)."""
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
        moved = out * np.exp(shift - excess * excess / 2) if relative else out + shift
        out = moved if drift is None else np.where(np.asarray(drift, dtype=bool), moved, out)
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
