"""Parallel overhead from execution times alone: the model of Höfinger, Ruh and Haunschmid (seed 003).

The model (Eq. 1-3), for n processes, single-process time t_1, serial fraction f (f_s), and b, c >= 0::

    t_A(n) = f t_1 + (1 - f) t_1 / n                                   (Amdahl)
    D(n)   = (1 + c - b) n + (b + c + c^2)
    t(n)   = t_A(n) [1 + b (n - 1) / D(n)] = t_A(n) (1 + c)(n + c) / D(n)
    tau(n) = t_A(n) b (n - 1) / D(n)          so  tau/t = b (n - 1) / ((1 + c)(n + c))

The paper's printed Eq. 5 and Eq. 7 do not follow from Eq. 1 (substitute a triple into Eq. 1 to check).
We solve a triple of points exactly through a linear system instead: with m = n - 1, y = n t_n / t_1,
alpha = 1/(1+c), beta = (1+c-b)/(1+c)^2, Eq. 1 reads y = (1 + f m)(1 + alpha m)/(1 + beta m), which is
linear in (u = f + alpha, v = f alpha, beta):  u + v m - beta y = (y - 1)/m. f and alpha are the roots
of z^2 - u z + v; the model is symmetric in f and alpha, so each solution has a *twin* with the same
t(n) everywhere but another tau(n). Both twins are reported: by the triple method as two solutions, by
the least-squares fit as f_s (the smaller root, as the paper carries on) and the twin_* columns. A triple
whose linear system is singular (condition number above 1e12: the three points carry no information to
separate u, v and beta) has no solution, a miss of its own kind ("none").

Usage::

    from perfsweep.overhead import fit_least_squares, triple_method
    fit = fit_least_squares(n, t, t1)          # bounded least squares (from the triples and a grid)
    tri = triple_method(n, t, t1)              # every triple, ranked by RMSD over all points
    print(fit.f_s, fit.b, fit.c, fit.rmsd, tri.considered, tri.misses, tri.best(2))
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.errors import OverheadError


# A triple's 3x3 system above this condition number has no usable solution (rounding decides it).
SINGULAR_CONDITION = 1e12


# ---------------------------------------------------------------- the model

def amdahl(n, t1: float, f: float):
    n = np.asarray(n, dtype=float)
    return f * t1 + (1.0 - f) * t1 / n


def model_time(n, t1: float, f: float, b: float, c: float):
    """t(n) of Eq. 1 (t(1) = t_1 for any parameters)."""
    n = np.asarray(n, dtype=float)
    return amdahl(n, t1, f) * (1.0 + c) * (n + c) / ((1.0 + c - b) * n + (b + c + c * c))


def model_overhead(n, t1: float, f: float, b: float, c: float):
    """tau(n) of Eq. 3: the parallel overhead contained in t(n)."""
    n = np.asarray(n, dtype=float)
    return amdahl(n, t1, f) * b * (n - 1.0) / ((1.0 + c - b) * n + (b + c + c * c))


def rmsd(n, t, t1: float, f: float, b: float, c: float) -> float:
    """Eq. 8 over the given points."""
    return float(np.sqrt(np.mean((np.asarray(t, float) - model_time(n, t1, f, b, c)) ** 2)))


def karp_flatt(n, t, t1: float):
    """Experimentally determined serial fraction e(n) = (1/S - 1/n) / (1 - 1/n), S = t_1 / t(n)."""
    n = np.asarray(n, dtype=float)
    s = t1 / np.asarray(t, dtype=float)
    return (1.0 / s - 1.0 / n) / (1.0 - 1.0 / n)


# ---------------------------------------------------------------- input checks

def check_points(n, t, t1: float | None) -> tuple[np.ndarray, np.ndarray, float]:
    """Validate and return the points with n > 1 (sorted) and t_1."""
    n = np.asarray(n, dtype=float)
    t = np.asarray(t, dtype=float)
    if n.shape != t.shape or n.ndim != 1:
        raise OverheadError(f"n and t must be 1-D of the same length (got {n.shape} and {t.shape})")
    if t1 is None or not np.isfinite(t1):
        raise OverheadError("no t_1: the single-process time is required (a run with 1 process)")
    if t1 <= 0 or np.any(~np.isfinite(t)) or np.any(t <= 0):
        bad = t1 if t1 <= 0 else t[~(np.isfinite(t) & (t > 0))][0]
        raise OverheadError(f"times must be positive and finite (got {bad})")
    if len(np.unique(n)) != len(n):
        dup = [v for v in n if np.sum(n == v) > 1][0]
        raise OverheadError(f"duplicate n = {dup:g}: give one time per process count")
    if np.any(n < 1) or np.any(n != np.round(n)):
        raise OverheadError("process counts n must be whole numbers >= 1")
    keep = n > 1
    n, t = n[keep], t[keep]
    if len(n) < 3:
        raise OverheadError(f"need at least 3 points with more than 1 process (got {len(n)})")
    order = np.argsort(n)
    return n[order], t[order], float(t1)


# ---------------------------------------------------------------- least squares

def twin_of(f: float, b: float, c: float) -> tuple[float, float, float] | None:
    """The other solution with the same t(n) at every n (f_s and alpha = 1/(1+c) swapped), or None
    where it is outside the model's bounds (f_s = 0 gives c = inf; b < 0)."""
    alpha, beta = 1.0 / (1.0 + c), (1.0 + c - b) / (1.0 + c) ** 2
    if not 0.0 < f <= 1.0:
        return None
    c_twin = 1.0 / f - 1.0
    b_twin = (1.0 + c_twin) - beta * (1.0 + c_twin) ** 2
    return (alpha, b_twin, c_twin) if b_twin >= 0.0 else None


@dataclass
class OverheadFit:
    """A least-squares fit. Of the two twins it reports the one with the smaller f_s (``twin`` says
    whether the roots coincide) and the other in ``twin_f_s``, ``twin_b``, ``twin_c`` (NaN if none)."""

    method: str
    t1: float
    f_s: float
    b: float
    c: float
    rmsd: float
    amdahl_f: float
    amdahl_rmsd: float
    n_points: int
    twin: str = ""
    twin_f_s: float = math.nan
    twin_b: float = math.nan
    twin_c: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_amdahl(n, t, t1: float) -> tuple[float, float]:
    """Least-squares serial fraction of Amdahl's law (closed form, clipped to [0, 1]) and its RMSD."""
    n, t = np.asarray(n, float), np.asarray(t, float)
    x = t1 * (1.0 - 1.0 / n)
    f = float(np.clip(np.dot(x, t - t1 / n) / np.dot(x, x), 0.0, 1.0))
    return f, float(np.sqrt(np.mean((t - amdahl(n, t1, f)) ** 2)))


# alpha = 1/(1+c) > 0: c up to 1e9 (the fit's c runs off to infinity where the data say alpha -> 0)
ALPHA_MIN = 1e-9
W_MIN = 1e-9  # the denominator 1 + beta m stays >= W_MIN (alpha m_max + 1) > 0 at every measured point
_GRID = 48  # values of alpha and of w in the coarse search, f solved in closed form at each
_BANDS = 7  # decades of alpha (and of f) from 1e-6 to 1: least squares refines the best start of each


def _unit_params(q, m_max: float) -> tuple[float, float, float]:
    """(f, alpha, w) -> (f, alpha, beta): beta = w (alpha + 1/m_max) - 1/m_max, so that w in (0, 1] is
    beta in (-1/m_max, alpha]: b >= 0 and no pole of t(n) up to the largest n."""
    f, alpha, w = q
    return f, alpha, w * (alpha + 1.0 / m_max) - 1.0 / m_max


def _starts(m, y, weight, m_max: float) -> np.ndarray:
    """Candidate starting points (f, alpha, w), K x 3, for least squares of weight (y - model) with
    y = (1 + f m)(1 + alpha m)/(1 + beta m).

    Every triple's exact solution and the linear (equation-error) least squares of all points (the
    module's linear form; both twins, clipped into the bounds), and every point of a coarse grid over
    (alpha, w) with the best f in [0, 1] in closed form at each (y is linear in f there)."""
    k = 1.0 / m_max
    rows = np.column_stack([np.ones_like(m), m, -y])
    rhs = (y - 1.0) / m
    triples = np.array(list(itertools.combinations(range(len(m)), 3)))
    a, r = rows[triples], rhs[triples]
    solvable = np.abs(np.linalg.det(a)) > 1e-12 * np.abs(a).max(axis=(1, 2)) ** 3
    sols = np.linalg.solve(a[solvable], r[solvable][..., None])[..., 0]
    sols = np.vstack([sols, np.linalg.lstsq(rows, rhs, rcond=None)[0]])
    u, v, beta = sols.T
    disc = u * u - 4.0 * v
    keep = np.isfinite(sols).all(axis=1) & (disc >= 0)
    u, v, beta, root = u[keep], v[keep], beta[keep], np.sqrt(disc[keep])
    f = np.concatenate([(u - root) / 2, (u + root) / 2])
    alpha = np.clip(np.concatenate([(u + root) / 2, (u - root) / 2]), ALPHA_MIN, 1.0)
    w = np.clip((np.concatenate([beta, beta]) + k) / (alpha + k), W_MIN, 1.0)
    exact = np.column_stack([np.clip(f, 0.0, 1.0), alpha, w])
    alpha = np.concatenate([[ALPHA_MIN], np.geomspace(1e-6, 1.0, _GRID - 1)])[:, None, None]
    w = np.concatenate([[W_MIN], np.geomspace(1e-4, 1.0, _GRID - 1)])[None, :, None]
    g = (1.0 + alpha * m) / (1.0 + (w * (alpha + k) - k) * m)  # y = g (1 + f m)
    gm = g * m * weight ** 2
    f = np.clip(np.sum(gm * (y - g), axis=2) / np.sum(gm * g * m, axis=2), 0.0, 1.0)
    grid = np.column_stack([f.ravel(), np.broadcast_to(alpha[..., 0], f.shape).ravel(),
                            np.broadcast_to(w[..., 0], f.shape).ravel()])
    return np.vstack([exact, grid])


def _spread(starts: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """The best start in each decade of alpha and in each decade of f (1e-6 and below, ..., 0.1 to 1),
    best first: the best starts alone would all lie in one basin, and the twins' and the c -> infinity
    basins differ by a fraction of a percent in RSS on real data (WIEN2k)."""
    picked = set()
    for column in (0, 1):
        band = np.clip(np.floor(np.log10(np.maximum(starts[:, column], 1e-300))), -_BANDS + 1, 0)
        for value in np.unique(band):
            inside = np.flatnonzero(band == value)
            picked.add(int(inside[np.argmin(cost[inside])]))
    order = sorted(picked, key=lambda i: cost[i])
    return starts[order]


def fit_least_squares(n, t, t1: float | None) -> OverheadFit:
    """Bounded least squares of (f_s, b, c) on the points with n > 1 (0 <= f_s <= 1, b, c >= 0).

    Fitted in the linear form's parameters (f, alpha = 1/(1+c), beta; module docstring), in which the
    bounds are a box and c = infinity is alpha = 0, from the exact solutions of the triples, the
    linear least squares of all points and a coarse grid (_starts); the best few are refined with an
    analytic Jacobian. (Searching (f, b, c) directly from a fixed set of 54 starts took 0.4-20 s per
    data set, most where c runs off to infinity; bench/overhead_fit.py.)"""
    n, t, t1 = check_points(n, t, t1)
    scale = float(np.median(t))
    m = n - 1.0
    m_max = float(m.max())
    base = t1 / n / scale  # t(n) / scale = base (1 + f m)(1 + alpha m)/(1 + beta m)
    target = t / scale

    def resid(q):  # q: (f, alpha, w), or 3 x K x 1 for K points at once
        f, alpha, beta = _unit_params(q, m_max)
        return base * (1.0 + f * m) * (1.0 + alpha * m) / (1.0 + beta * m) - target

    def jac(q):
        f, alpha, beta = _unit_params(q, m_max)
        den = 1.0 + beta * m
        d_beta = -base * (1.0 + f * m) * (1.0 + alpha * m) * m / den ** 2
        return np.column_stack([base * m * (1.0 + alpha * m) / den,
                                base * (1.0 + f * m) * m / den + d_beta * q[2],
                                d_beta * (alpha + 1.0 / m_max)])

    starts = _starts(m, n * t / t1, base, m_max)
    best = None
    for q0 in _spread(starts, np.sum(resid(starts.T[..., None]) ** 2, axis=1)):
        res = least_squares(resid, q0, jac=jac, bounds=([0.0, ALPHA_MIN, W_MIN], [1.0, 1.0, 1.0]),
                            x_scale="jac", max_nfev=500)
        if best is None or res.cost < best.cost:
            best = res
    f, alpha, beta = (float(v) for v in _unit_params(best.x, m_max))
    b, c = (alpha - beta) / alpha ** 2, 1.0 / alpha - 1.0
    other = twin_of(f, b, c)
    if other is not None and other[0] < f:  # report the smaller-f_s twin first, as the triple method
        (f, b, c), other = other, (f, b, c)
    af, armsd = fit_amdahl(n, t, t1)
    if other is None:
        twin = "f_s is the only root in bounds (no twin)"
    elif math.isclose(other[0], f, rel_tol=1e-3):
        twin = "f_s = 1/(1+c): the twins coincide (f_s and c are not separately determined)"
    else:
        twin = "f_s is the smaller root; the twin (twin_f_s, twin_b, twin_c) gives the same t(n)"
    return OverheadFit("least_squares", t1, f, b, c, rmsd(n, t, t1, f, b, c), af, armsd, len(n),
                       twin, *(other or (math.nan,) * 3))


# ---------------------------------------------------------------- triples

@dataclass
class TripleSolution:
    triple: tuple[int, int, int]
    twin: int  # 0 or 1: which root is f_s
    f_s: float
    b: float
    c: float
    rmsd: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["triple"] = "(" + ", ".join(str(int(v)) for v in self.triple) + ")"
        return d


@dataclass
class TripleResult:
    considered: int
    misses: dict[str, int]
    valid_triples: int
    solutions: list[TripleSolution] = field(default_factory=list)

    def best(self, k: int = 1) -> list[TripleSolution]:
        return self.solutions[:k]

    def summary(self) -> dict[str, Any]:
        return {"triples": self.considered, "no_solution": self.misses["none"], "misses_c": self.misses["c"], "misses_f_s": self.misses["f_s"],
                "misses_b": self.misses["b"], "valid_triples": self.valid_triples,
                "valid_solutions": len(self.solutions)}


def solve_triple(n3, t3, t1: float) -> tuple[str | None, list[tuple[float, float, float]]]:
    """Exact (f, b, c) through three points. Returns (miss kind or None, [solutions, twin order]); the
    miss kinds: "none" (singular system), "c", "f_s", "b" (first bound that fails for both twins)."""
    n3, t3 = np.asarray(n3, float), np.asarray(t3, float)
    m = n3 - 1.0
    y = n3 * t3 / t1
    a = np.column_stack([np.ones(3), m, -y])
    if not np.isfinite(a).all() or np.linalg.cond(a) > SINGULAR_CONDITION:
        return "none", []
    u, v, beta = np.linalg.solve(a, (y - 1.0) / m)
    disc = u * u - 4.0 * v
    if not np.isfinite(disc) or disc < 0:
        return "c", []
    r = math.sqrt(disc)
    roots = ((u - r) / 2.0, (u + r) / 2.0)
    twins = [(roots[0], roots[1]), (roots[1], roots[0])]  # (f, alpha)
    with_c = [(f, 1.0 / al - 1.0) for f, al in twins if 0.0 < al <= 1.0]
    if not with_c:
        return "c", []
    with_f = [(f, c) for f, c in with_c if 0.0 <= f <= 1.0]
    if not with_f:
        return "f_s", []
    sols = [(f, (1.0 + c) - beta * (1.0 + c) ** 2, c) for f, c in with_f]
    sols = [(f, b, c) for f, b, c in sols if b >= 0.0]
    if not sols:
        return "b", []
    return None, sols


def triple_method(n, t, t1: float | None) -> TripleResult:
    """Every triple of the points with n > 1, solved exactly, ranked by RMSD over all those points."""
    n, t, t1 = check_points(n, t, t1)
    misses = {"none": 0, "c": 0, "f_s": 0, "b": 0}
    sols: list[TripleSolution] = []
    considered = valid = 0
    for idx in itertools.combinations(range(len(n)), 3):
        considered += 1
        idx = list(idx)
        miss, found = solve_triple(n[idx], t[idx], t1)
        if miss:
            misses[miss] += 1
            continue
        valid += 1
        triple = tuple(int(v) for v in n[idx])
        for k, (f, b, c) in enumerate(found):
            sols.append(TripleSolution(triple, k, f, b, c, rmsd(n, t, t1, f, b, c)))
    # Twins tie in RMSD up to rounding; within a tie the twin with the smaller f_s comes first (the
    # paper also carries the smaller f_s on). It is the one whose tau(n) is the larger share of t(n).
    sols.sort(key=lambda s: (float(f"{s.rmsd:.9g}"), s.triple, s.f_s))
    return TripleResult(considered, misses, valid, sols)


# ---------------------------------------------------------------- tables for one data set

def analyse(n, t, t1: float | None, tau_measured=None, top: int = 2) -> dict[str, Any]:
    """Everything the reproduction and the pipeline report for one (n, t) data set."""
    fit = fit_least_squares(n, t, t1)
    tri = triple_method(n, t, t1)
    nn, tt, t1 = check_points(n, t, t1)
    curve = {
        "n": nn, "t_measured": tt,
        "t_fit": model_time(nn, t1, fit.f_s, fit.b, fit.c),
        "tau_fit": model_overhead(nn, t1, fit.f_s, fit.b, fit.c),
        "t_amdahl": amdahl(nn, t1, fit.amdahl_f),
        "karp_flatt": karp_flatt(nn, tt, t1),
    }
    if tri.solutions:
        s = tri.solutions[0]
        curve["t_best_triple"] = model_time(nn, t1, s.f_s, s.b, s.c)
        curve["tau_best_triple"] = model_overhead(nn, t1, s.f_s, s.b, s.c)
    if tau_measured is not None:
        tau_map = dict(zip(np.asarray(n, float), np.asarray(tau_measured, float)))
        curve["tau_measured"] = np.array([tau_map.get(v, np.nan) for v in nn])
    distinct: list[TripleSolution] = []  # the first-ranked twin of the best `top` distinct triples
    for s in tri.solutions:
        if all(s.triple != d.triple for d in distinct):
            distinct.append(s)
        if len(distinct) == top:
            break
    return {"fit": fit, "triples": tri, "curve": curve, "top": distinct, "t1": t1}


def fit_per_group(medians, p_col: str = PROCESS_COUNT, time_col: str = "median", group_cols: list[str] | None = None):
    """One overhead fit per combination of the other parameters of a study's medians table.

    Returns (fits, curves, results): ``fits`` has one row per group (t_1, f_s, b, c, RMSD, Amdahl f,
    best triple, or a ``reason`` when the group cannot be fitted: no p = 1, fewer than 3 points with
    p > 1); ``curves`` the measured and modelled t and tau per p; ``results`` the analyse() output
    per fitted group, keyed by the group's label.
    """
    group_cols = list(group_cols or [])
    fits, curves, results = [], [], {}
    groups = medians.groupby(group_cols, sort=True) if group_cols else [((), medians)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{k}={v:g}" for k, v in zip(group_cols, key)) or "all"
        row: dict[str, Any] = dict(zip(group_cols, key))
        row["group"] = label
        one = g.loc[g[p_col] == 1, time_col]
        try:
            res = analyse(g[p_col].to_numpy(float), g[time_col].to_numpy(float),
                          float(one.iloc[0]) if len(one) else None)
        except OverheadError as exc:
            row["reason"] = str(exc)
            fits.append(row)
            continue
        fit, tri = res["fit"], res["triples"]
        row.update({k: v for k, v in fit.to_dict().items() if k != "method"})
        row["reason"] = ""
        if tri.solutions:
            best = tri.solutions[0]
            row.update(best_triple=best.to_dict()["triple"], triple_f_s=best.f_s, triple_b=best.b,
                       triple_c=best.c, triple_rmsd=best.rmsd)
        row.update(tri.summary())
        fits.append(row)
        cur = pd.DataFrame(res["curve"]).rename(columns={"n": p_col})
        for k, v in zip(group_cols, key):
            cur[k] = v
        cur["group"] = label
        curves.append(cur)
        results[label] = res
    return pd.DataFrame(fits), (pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()), results
