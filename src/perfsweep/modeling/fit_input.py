"""What the modeler takes: its options (FitOptions) and the input, checked.

The points X (N x q) are checked by check_points (finite, positive, MIN_VALUES distinct values per
parameter); the measurement sets of a batch (each N or N x repetitions) by Sets, all sets of one
number of repetitions at once: which cannot be modelled (check_values says why), each set scaled to a
largest mean of 1, its means and the noise its repetitions show, and the weighting and sign rule its
fit gets. perfsweep.modeling.fit fits what passes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from perfsweep.errors import ModelingError

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
    # every data set (the measured means and each resample) takes the simplest admissible form within this
    # many coefficients' penalties of its best (modeling.consensus); 0: its best (config modeling.simplest_within)
    simplest_within: float = 0.0
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
    # per point of X (in order): whether the host may have moved its mean by more than its repetitions show;
    # the resamples that decide the form move only these points by the model's scatter, those of the
    # intervals every point (modeling.fit_resample); None: every point (nothing is known of the host).
    # From an aggregate: perfsweep.modeling.pipeline.drift_points
    drift: tuple[bool, ...] | None = None


def check_points(x, names, needed: dict[str, int] | None = None) -> tuple[np.ndarray, list[str]]:
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


def check_values(y, n: int) -> np.ndarray:
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


class Sets:
    """The measurement sets of a batch, checked, scaled to a largest mean of 1, their means and noise:
    computed for all sets of one number of repetitions at once (the same arithmetic as set by set).
    ``bad``: the sets that cannot be modelled (check_values says why); per set index ``i``:
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
