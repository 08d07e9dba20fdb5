"""PMNF terms: x^i * log2(x)^j per parameter, and products of them across parameters.

The default search space is Extra-P 4.2.5's 42 (i, j) pairs (its default
single-parameter hypotheses). Negative
exponents (strong scaling, e.g. p^(-1)) can be added with :func:`exponent_pairs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

# RSS below this fraction of sum(w y^2) counts as an exact fit: the normal equations cannot resolve less
EXACT = 1e-13

_J0 = ["0", "1/4", "1/3", "1/2", "2/3", "3/4", "4/5", "1", "5/4", "4/3", "3/2", "5/3", "7/4", "2", "9/4",
       "7/3", "5/2", "8/3", "11/4", "3"]
_J1 = ["0", "1/4", "1/3", "1/2", "2/3", "3/4", "1", "5/4", "4/3", "3/2", "2", "5/2", "3"]
_J2 = ["0", "1/4", "1/3", "1/2", "2/3", "3/4", "1", "3/2", "2", "5/2"]
_NEGATIVE = ["-1/2", "-1", "-3/2", "-2"]

EXTRAP_PAIRS: tuple[tuple[Fraction, int], ...] = tuple(
    (Fraction(i), j) for j, group in ((0, _J0), (1, _J1), (2, _J2)) for i in group if not (i == "0" and j == 0)
) + ((Fraction(0), 0),)


def exponent_pairs(negative: bool = False, logs: bool = True) -> list[tuple[Fraction, int]]:
    """Extra-P's 42 pairs (the constant (0, 0) included); with ``negative`` also x^(-1/2) .. x^(-2);
    without ``logs`` only the pure powers (j = 0)."""
    pairs = [p for p in EXTRAP_PAIRS if p != (Fraction(0), 0)]
    if negative:
        pairs += [(Fraction(i), 0) for i in _NEGATIVE] + [(Fraction(i), 1) for i in _NEGATIVE[:2]]
    return pairs if logs else [p for p in pairs if p[1] == 0]


@dataclass(frozen=True, order=True)
class Factor:
    """x_param^i * log2(x_param)^j."""

    param: int
    i: Fraction
    j: int

    def values(self, x: np.ndarray) -> np.ndarray:
        col = x[:, self.param]
        out = np.ones_like(col) if self.i == 0 else col ** float(self.i)
        if self.j:
            out = out * np.log2(col) ** self.j
        return out

    def growth(self) -> tuple[float, int]:
        return (float(self.i), self.j)

    def text(self, names: list[str]) -> str:
        x = names[self.param]
        power = "{x}^{i}" if self.i.denominator == 1 and self.i > 0 else "{x}^({i})"  # x^(3/2), x^(-1)
        return self._render(x, power, "log2({x})", "log2({x})^{j}", " * ")

    def latex(self, names: list[str]) -> str:
        return self._render(names[self.param], "{x}^{{{i}}}", r"\log_2 {x}", r"\log_2^{{{j}}} {x}", r" \cdot ")

    def _render(self, x: str, power: str, log1: str, logj: str, join: str) -> str:
        parts = []
        if self.i != 0:
            parts.append(x if self.i == 1 else power.format(x=x, i=_frac(self.i)))
        if self.j:
            parts.append(log1.format(x=x) if self.j == 1 else logj.format(x=x, j=self.j))
        return join.join(parts)


def _frac(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


@dataclass(frozen=True, order=True)
class Term:
    """A product of factors of distinct parameters (a PMNF term without its coefficient)."""

    factors: tuple[Factor, ...]

    def values(self, x: np.ndarray) -> np.ndarray:
        out = np.ones(len(x))
        for f in self.factors:
            out = out * f.values(x)
        return out

    def text(self, names: list[str]) -> str:
        return " * ".join(f.text(names) for f in self.factors)

    def latex(self, names: list[str]) -> str:
        return r" \cdot ".join(f.latex(names) for f in self.factors)

    def to_list(self) -> list[list]:
        return [[f.param, str(f.i), f.j] for f in self.factors]

    @classmethod
    def from_list(cls, data: list[list]) -> "Term":
        key = _key(data) if cls is Term else None  # a term read before is the same (immutable) object
        if key is not None and key in _TERMS:
            return _TERMS[key]
        term = cls(tuple(Factor(int(p), _fraction(i), int(j)) for p, i, j in data))
        if key is not None and len(_TERMS) < 4096:
            _TERMS[key] = term
        return term

    def outgrows(self, other: "Term") -> bool:
        """True if this term grows asymptotically at least as fast as ``other`` in every parameter
        and strictly faster in one (parameters absent from a term have growth (0, 0))."""
        mine = {f.param: f.growth() for f in self.factors}
        theirs = {f.param: f.growth() for f in other.factors}
        params = set(mine) | set(theirs)
        ge = all(mine.get(p, (0.0, 0)) >= theirs.get(p, (0.0, 0)) for p in params)
        gt = any(mine.get(p, (0.0, 0)) > theirs.get(p, (0.0, 0)) for p in params)
        return ge and gt


_TERMS: dict[tuple, Term] = {}  # Term.from_list's terms by their lists' contents (a models.json repeats a few)


def _key(data: list[list]) -> tuple | None:
    """A term's list as a key of _TERMS (None: no list of lists of hashable values)."""
    try:
        key = tuple(map(tuple, data))
        hash(key)
    except TypeError:
        return None
    return key


_FRACTIONS: dict[str, Fraction] = {}  # an exponent's text, parsed once ("3/4": Fraction's parsing is slow)


def _fraction(value: object) -> Fraction:
    if isinstance(value, str) and value in _FRACTIONS:
        return _FRACTIONS[value]
    out = Fraction(value)  # type: ignore[arg-type]  # its own error for what is no number
    if isinstance(value, str) and len(_FRACTIONS) < 4096:
        _FRACTIONS[value] = out
    return out


def dominant_terms(terms: list[Term]) -> set[Term]:
    """The terms that no other term outgrows."""
    return {t for t in terms if not any(o.outgrows(t) for o in terms if o != t)}
