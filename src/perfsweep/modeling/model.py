"""A fitted PMNF model: f(x) = c_0 + sum_k c_k * term_k(x), with its fit statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import norm

from perfsweep.modeling.terms import Term, dominant_terms


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
    lead_share: float = float("nan")  # share of the resamples with the same lead terms
    runner_up: str = ""  # the most frequent other lead terms among the resamples ...
    runner_up_share: float = float("nan")  # ... and their share
    processes: str | None = None  # the process-count parameter, if the model has one
    fixed: dict[str, Any] = field(default_factory=dict)  # the study's fixed parameters (models.json), e.g. p = 4

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
        return out

    def lead(self) -> str:
        """The dominant terms (those no other term outgrows) as text: the model's form."""
        lead = sorted(t.text(self.param_names) for t in dominant_terms(self.terms))
        return " + ".join(lead) if lead else "constant"

    def interval(self, x, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """The ``level`` interval of the expected value at ``x`` (the choice of the form included)
        from the spread of the resampled models' predictions around this model's: log-normal where
        all are positive (run times), else normal. With the few resamples the pipeline affords this
        covers better than their percentiles (90 % intervals, 60 noisy 2-parameter functions: 0.88 vs
        0.86 with 40 resamples, 0.93 vs 0.87 with 100). NaN without resamples."""
        pred = self.predict(x)
        if not self.bootstrap:
            return np.full(len(pred), np.nan), np.full(len(pred), np.nan)
        preds = np.array([b.predict(x) for b in self.bootstrap])
        z = float(norm.ppf(0.5 + level / 2))
        positive = np.all(preds > 0, axis=0) & (pred > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(positive, np.std(np.log(np.where(positive, preds, 1.0)), axis=0, ddof=1),
                              np.std(preds, axis=0, ddof=1))
            low = np.where(positive, pred * np.exp(-z * spread), pred - z * spread)
            high = np.where(positive, pred * np.exp(z * spread), pred + z * spread)
        return low, high

    def __str__(self) -> str:
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
        return text

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
            "bootstrap": [{"terms": [t.to_list() for t in b.terms], "coefficients": [float(c) for c in b.coefficients]}
                          for b in self.bootstrap],
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
                           np.asarray(b["coefficients"], dtype=float)) for b in d.get("bootstrap", [])],
            lead_share=d.get("lead_share", float("nan")), runner_up=d.get("runner_up", ""),
            runner_up_share=d.get("runner_up_share", float("nan")), processes=d.get("processes"),
        )


_STATISTICS = ("adj_r2", "r2", "smape", "rss", "cv_score", "lead_share", "runner_up_share")


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float (in mappings and lists) replaced by None."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value
