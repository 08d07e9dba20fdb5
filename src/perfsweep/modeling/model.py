"""A fitted PMNF model: f(x) = c_0 + sum_k c_k * term_k(x), with its fit statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfsweep.modeling.terms import Term, dominant_terms


# the temperature of the forms' weights (Model.form_spread), calibrated on synthetic suites with known
# truth by bench/interval_forms.py (bench/results/interval_forms.txt), not on any sweep's validation points:
# 0 there (2026-11-27), the forms' spread off by default (any temperature moved the suite's coverage
# further from 90 % than it helped); Model.interval(..., temperature=T) applies it
FORM_TEMPERATURE = 0.0
# the share of the extrapolation error per doubling (Model.beyond) the intervals carry, calibrated with it
REACH = 1.0


def _num(v: float) -> str:
    return f"{v:.3g}" if abs(v) >= 1e-2 or v == 0 else f"{v:.3g}".replace("e-0", "e-")


@dataclass
class Model:
    """Usage::

        model = fit_model(X, Y, ["n", "m"])
        print(model)                    # 4.41 + 8.03e-5 * m * n * log2(n)
        model.predict([[8000, 2]])      # array([...])
        model.adj_r2, model.smape, model.rss, model.cv_score
        Model.from_dict(model.to_dict())
    """

    param_names: list[str]
    terms: list[Term]
    coefficients: np.ndarray  # constant first, then one per term
    adj_r2: float = float("nan")
    r2: float = float("nan")
    smape: float = float("nan")
    rss: float = float("nan")
    cv_score: float = float("nan")
    points: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    values: np.ndarray = field(default_factory=lambda: np.empty(0))
    # the models of resampled repetitions (FitOptions.bootstrap): how sure the form and predictions are
    bootstrap: list["Model"] = field(default_factory=list)
    lead_share: float = float("nan")  # share of the resamples whose lead order agrees (modeling.lead_orders)
    runner_up: str = ""  # the most frequent other lead terms among the resamples ...
    runner_up_share: float = float("nan")  # ... and their share
    processes: str | None = None  # the process-count parameter, if the model has one
    # how far a new measurement (a point's mean) strays from the model beyond the fit's own uncertainty:
    # the residuals' spread (the host's drift between configurations, what the form misses), at least
    # the repetitions' noise; a fraction of the value if scatter_relative, else in the metric's unit
    scatter: float = float("nan")
    scatter_relative: bool = True
    # every point's runs known undisturbed (FitOptions.drift: none flagged): the scatter beyond the
    # repetitions' noise is then the form's misfit alone, which Model.interval counts once (see there)
    quiet: bool = False
    # a rate (steps/s, GFLOP/s) that falls as a parameter grows is modelled through its reciprocal (the
    # time per unit of work, a sum of costs): the model is then 1 / f(x) with f the PMNF function
    reciprocal: bool = False
    # per parameter the log error per doubling beyond the measured range (modeling.consensus.extrapolation_errors)
    extrapolation: dict[str, float] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)  # the study's fixed parameters (models.json), e.g. p = 4
    # the forms the measured means cannot tell from this one (modeling.consensus), each fitted to them, and
    # every form's criterion above the best admissible one's (``criterion``): Model.form_spread weighs them
    alternatives: list["Model"] = field(default_factory=list)
    criterion: float = float("nan")

    def predict(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim <= 1 and len(self.param_names) == 1:
            x = x.reshape(-1, 1)  # predict([128, 256]) of a one-parameter model: two points
        x = np.atleast_2d(x)
        if x.shape[1] != len(self.param_names):
            raise ValueError(f"predict: expected {len(self.param_names)} columns "
                             f"({', '.join(self.param_names)}), got {x.shape[1]}")
        out = np.full(len(x), float(self.coefficients[0]))
        for c, t in zip(self.coefficients[1:], self.terms):
            out += c * t.values(x)
        if self.reciprocal:
            with np.errstate(divide="ignore"):
                return 1.0 / out
        return out

    def expected(self, x) -> np.ndarray:
        """The prediction at ``x`` averaged over the forms the data cannot tell apart: the geometric mean
        of the resampled models' predictions (``bootstrap``: each resample's own form, fitted to it),
        their mean where one is not positive; this model's prediction without resamples. Bagging
        (Breiman 1996) of the form's choice: inside the measured range it is this model's prediction
        within the noise, beyond it the forms that fit alike and part (n^(2/3) log2(n)^2 m^2 and
        n m^(9/4), 19 % apart at 2.4x the grid) count by how often the resamples chose them, where the
        formula is the one of them that this sweep's means chose. On the committed replicate sweeps
        fitted again (bench/bagging.py: bench/results/replicates/f301cd1-quiet and
        replicates/0aeb32f-quiet, three quiet sweeps each, 160 resamples per model) the three sweeps'
        predictions at the held-back points 1.4-2.4x beyond the grid lay within 10 % of each other at 17
        of 18 points in each set (the formulas': 13 and 11; with 40 resamples 16 of 18) and within 15 %
        at all; in three fresh sweeps of c00a469 (bench/results/replicates/c00a469-quiet) at all 18, at
        most 5.7 % apart. The intervals are centred on it (Model.interval); perfsweep predict and
        recommend, the validation points and predictions.csv report it."""
        return _averaged(np.array([b.predict(x) for b in self.bootstrap])) if self.bootstrap else self.predict(x)

    def lead(self) -> str:
        """The dominant terms (those no other term outgrows) as text: the model's form."""
        lead = sorted(t.text(self.param_names) for t in dominant_terms(self.terms))
        return " + ".join(lead) if lead else "constant"

    def interval(self, x, level: float = 0.9, temperature: float | None = None,
                 reach: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``level`` interval of a new measurement (a point's mean over its repetitions) at ``x``:
        the spread of the resampled models' predictions around their average (``expected``, the
        interval's centre: the choice of the form included; the resamples also carry the scatter
        between configurations that the repetitions do not show), the ``scatter`` a new measurement
        has around the model and, beyond the measured range, the ``extrapolation`` error per doubling
        times the doublings (Model.beyond; its share ``reach``, REACH by default), added in variance,
        and the spread of the forms the measured data cannot tell apart (form_spread, at
        ``temperature``, FORM_TEMPERATURE by default); log-normal where all are positive (run times),
        else normal: with the few resamples the pipeline affords, a spread covers better than the
        resamples' percentiles.

        Where the host was known quiet at every point (``quiet``) the three are not added but the
        largest taken: the scatter beyond the repetitions' noise is then the form's misfit alone (the
        repetitions, measured in rounds, show the host's drift), and each term is an estimate of what
        that misfit does at ``x`` (the resamples were moved by it, the scatter is it, the extrapolation
        error is it carried beyond the grid); added, they counted it up to three times. On the
        committed quiet replicate sweeps fitted again (9 sweeps of f301cd1, 0aeb32f and c00a469, 162
        held-back points) the sum covered 96-100 % per set at a median width of 16-22 %, the largest
        89-96 % at 12-18 %; the busy sets' studies with disturbed points keep the sum. How often it
        covers is measured by tests/test_model_uncertainty.py and tests/test_model_stability.py
        (synthetic) and bench/replicates.py (validation points of real sweeps). NaN without resamples."""
        if not self.bootstrap:
            n = len(self.predict(x))
            return np.full(n, np.nan), np.full(n, np.nan)
        preds = np.array([b.predict(x) for b in self.bootstrap])
        pred = _averaged(preds)  # expected(x), from the one pass over the resamples
        from scipy.stats import norm  # here: scipy.stats takes seconds to import (a perfsweep command's start)

        z = float(norm.ppf(0.5 + level / 2))
        positive = np.all(preds > 0, axis=0) & (pred > 0)
        scatter = self.scatter if np.isfinite(self.scatter) else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.scatter_relative:
                rel, absolute = np.full(len(pred), scatter), scatter * np.abs(pred)
            else:
                rel, absolute = scatter / np.abs(pred), np.full(len(pred), scatter)
            # around the prediction averaged over the resamples' forms (expected): how far they part counts
            centre = np.log(np.where(positive, pred, 1.0))
            log_spread = _around(np.log(np.where(positive, preds, 1.0)), centre)
            spread_abs = _around(preds, pred)
            forms = self.form_spread(x, temperature)
            if forms is not None:  # the forms' part: at least what the criterion's weights give (not added
                log_spread = np.maximum(log_spread, forms)  # to the resamples' spread, which has their forms)
                spread_abs = np.maximum(spread_abs, forms * np.abs(pred))
            beyond = self.beyond(x)  # beyond the measured range: how much the form's reach depends on its data
            beyond = np.zeros(len(pred)) if beyond is None else beyond * (REACH if reach is None else reach)
            join = np.fmax if self.quiet else np.hypot  # a quiet host's: each term an estimate of the misfit
            spread = np.where(positive, join(join(log_spread, rel), beyond), join(spread_abs, absolute))
            low = np.where(positive, pred * np.exp(-z * spread), pred - z * spread)
            high = np.where(positive, pred * np.exp(z * spread), pred + z * spread)
        return low, high

    def form_spread(self, x, temperature: float | None = None) -> np.ndarray | None:
        """Model averaging over the forms (Burnham and Anderson 2002, ch. 4): the root mean square of
        the relative departure of the ``alternatives``' predictions from this model's at ``x`` (log
        departure where both are positive), each weighted by exp(-criterion / (2 temperature)) and
        this model by its own, the weights summing to 1 (temperature 1: Akaike weights of the search's
        criterion). None without alternatives or at temperature 0 (FORM_TEMPERATURE: calibrated by
        bench/interval_forms.py on synthetic suites)."""
        temperature = FORM_TEMPERATURE if temperature is None else temperature
        if not self.alternatives or temperature <= 0:
            return None
        own = self.criterion if np.isfinite(self.criterion) else 0.0
        deltas = np.array([own] + [a.criterion for a in self.alternatives], dtype=float)
        weights = np.exp(-(deltas - deltas.min()) / (2 * temperature))
        weights /= weights.sum()
        pred = self.predict(x)
        preds = np.array([a.predict(x) for a in self.alternatives])
        with np.errstate(divide="ignore", invalid="ignore"):
            both = (preds > 0) & (pred > 0)
            dev = np.where(both, np.log(np.where(both, preds, 1.0) / np.where(pred > 0, pred, 1.0)),
                           (preds - pred) / np.abs(pred))
            dev = np.where(np.isfinite(dev), dev, 0.0)
        return np.sqrt(np.sum(weights[1:, None] * dev * dev, axis=0))

    def beyond(self, x) -> np.ndarray | None:
        """The log spread that extrapolation adds at the points ``x``: per parameter its error per
        doubling (``extrapolation``) times the doublings beyond the measured range (either side),
        added in variance; None without the figures or the range."""
        points = np.asarray(self.points, dtype=float)
        if not self.extrapolation or points.ndim != 2 or not len(points):
            return None
        x = np.asarray(x, dtype=float)
        x = x.reshape(-1, 1) if x.ndim <= 1 and len(self.param_names) == 1 else np.atleast_2d(x)
        total = np.zeros(len(x))
        for k, name in enumerate(self.param_names):
            rate = self.extrapolation.get(name)
            if rate:
                lo, hi = points[:, k].min(), points[:, k].max()
                out = np.log2(np.maximum(x[:, k] / hi, lo / x[:, k]).clip(min=1.0))
                total += (rate * out) ** 2
        return np.sqrt(total)

    def __str__(self) -> str:
        text = self._text()
        return f"1 / ({text})" if self.reciprocal else text

    def _text(self) -> str:
        parts = [] if self.coefficients[0] == 0 and self.terms else [_num(float(self.coefficients[0]))]
        for c, t in zip(self.coefficients[1:], self.terms):
            sign = "-" if c < 0 else "+"
            parts.append(f"{sign} {_num(abs(float(c)))} * {t.text(self.param_names)}")
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:] if text.startswith("- ") else text

    def to_latex(self) -> str:
        def num(v: float) -> str:
            s = f"{v:.3g}"
            if "e" in s:
                mant, exp = s.split("e")
                return rf"{mant} \cdot 10^{{{int(exp)}}}"
            return s

        text = num(float(self.coefficients[0]))
        for c, t in zip(self.coefficients[1:], self.terms):
            sign = "-" if c < 0 else "+"
            text += rf" {sign} {num(abs(float(c)))} \cdot {t.latex(self.param_names)}"
        return rf"\frac{{1}}{{{text}}}" if self.reciprocal else text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able mapping; an undefined statistic (NaN: k = 1, an exact fit) is None, so that the
        file is strict JSON (null) that other tools read too."""
        return _strict({
            "param_names": list(self.param_names),
            "terms": [t.to_list() for t in self.terms],
            "coefficients": [float(c) for c in self.coefficients],
            "text": str(self),
            "latex": self.to_latex(),
            "adj_r2": self.adj_r2, "r2": self.r2, "smape": self.smape, "rss": self.rss,
            "cv_score": self.cv_score,
            "points": np.asarray(self.points).tolist(),
            "values": np.asarray(self.values).tolist(),
            "lead": self.lead(), "lead_share": self.lead_share,
            "runner_up": self.runner_up, "runner_up_share": self.runner_up_share,
            "processes": self.processes,
            "scatter": self.scatter, "scatter_relative": self.scatter_relative, "quiet": self.quiet,
            "reciprocal": self.reciprocal,
            "bootstrap": [{"terms": [t.to_list() for t in b.terms], "coefficients": [float(c) for c in b.coefficients]}
                          for b in self.bootstrap],
            "extrapolation": dict(self.extrapolation),
            "criterion": self.criterion,
            "alternatives": [{"terms": [t.to_list() for t in a.terms], "coefficients": [float(c) for c in a.coefficients],
                              "criterion": float(a.criterion)} for a in self.alternatives],
        })

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Model":
        d = {k: float("nan") if v is None and k in _STATISTICS else v for k, v in d.items()}
        return cls(
            param_names=list(d["param_names"]),
            terms=[Term.from_list(t) for t in d["terms"]],
            coefficients=np.asarray(d["coefficients"], dtype=float),
            adj_r2=d.get("adj_r2", float("nan")), r2=d.get("r2", float("nan")),
            smape=d.get("smape", float("nan")), rss=d.get("rss", float("nan")),
            cv_score=d.get("cv_score", float("nan")),
            points=np.asarray(d.get("points", []), dtype=float), values=np.asarray(d.get("values", []), dtype=float),
            bootstrap=[cls(list(d["param_names"]), [Term.from_list(t) for t in b["terms"]],
                           np.asarray(b["coefficients"], dtype=float), reciprocal=bool(d.get("reciprocal", False)))
                       for b in d.get("bootstrap", [])],
            extrapolation={str(k): float(v) for k, v in (d.get("extrapolation") or {}).items()},
            alternatives=[cls(list(d["param_names"]), [Term.from_list(t) for t in a["terms"]],
                              np.asarray(a["coefficients"], dtype=float), reciprocal=bool(d.get("reciprocal", False)),
                              criterion=float(a["criterion"])) for a in d.get("alternatives") or []],
            criterion=d.get("criterion", float("nan")),
            lead_share=d.get("lead_share", float("nan")), runner_up=d.get("runner_up", ""),
            runner_up_share=d.get("runner_up_share", float("nan")), processes=d.get("processes"),
            scatter=d.get("scatter", float("nan")), scatter_relative=d.get("scatter_relative", True),
            quiet=bool(d.get("quiet", False)),
            reciprocal=bool(d.get("reciprocal", False)),
        )


_STATISTICS = ("adj_r2", "r2", "smape", "rss", "cv_score", "lead_share", "runner_up_share", "scatter", "criterion")


def _averaged(preds: np.ndarray) -> np.ndarray:
    """Per column, the geometric mean of the resamples' predictions (rows), their mean where one is not
    positive (Model.expected)."""
    positive = np.all(preds > 0, axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        geometric = np.exp(np.mean(np.log(np.where(positive, preds, 1.0)), axis=0))
    return np.where(positive, geometric, preds.mean(axis=0))


def _around(values: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Per column, the root mean square of the rows' departures from ``centre`` (B - 1 degrees of freedom,
    the standard deviation's where the rows' mean is the centre)."""
    return np.sqrt(np.sum((values - centre) ** 2, axis=0) / max(len(values) - 1, 1))


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float (in mappings and lists) replaced by None."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def fill_statistics(model: Model, y: np.ndarray, pred: np.ndarray) -> None:
    """R^2, adjusted R^2, RSS and SMAPE of ``model`` whose predictions at its points are ``pred``."""
    stats = statistics(np.asarray(y, dtype=float)[None], np.asarray(pred, dtype=float)[None], np.array([len(model.terms)]))
    model.rss, model.r2, model.adj_r2, model.smape = (float(v[0]) for v in stats)


def statistics(y: np.ndarray, pred: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """RSS, R^2, adjusted R^2 and SMAPE (M,) of M models at once: values and predictions (M, N), terms
    per model (M,). Row by row the same arithmetic as one model alone (a batch gives the same bits)."""
    resid = y - pred
    rss = np.sum(resid ** 2, axis=1)
    tss = np.sum((y - y.mean(axis=1, keepdims=True)) ** 2, axis=1)
    n = y.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(tss > 0, 1.0 - rss / np.where(tss > 0, tss, 1.0), 1.0)
        dof = n - k - 1
        adj_r2 = np.where(dof > 0, 1.0 - (1.0 - r2) * (n - 1) / np.where(dof > 0, dof, 1), np.nan)
    denominator = np.abs(pred) + np.abs(y)
    smape = np.mean(np.where(denominator > 0, 2 * np.abs(resid) / np.where(denominator > 0, denominator, 1), 0.0),
                    axis=1) * 100
    return rss, r2, adj_r2, smape
