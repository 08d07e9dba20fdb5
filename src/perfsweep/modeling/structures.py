"""How the terms of several parameters combine into one PMNF model (sums and products).

A structure is a tuple of product terms, each a tuple of parameter indices: ``((0, 1), (2,))`` is
a*b + c. The structures of q parameters are the partitions of the parameters into product terms,
each optionally with up to ``extra_terms`` lower-order terms (proper sub-products of one of its
blocks): for two parameters a*b, a+b, a*b+a, a*b+b, a*b+a+b; for three 35 structures. These contain
Extra-P 4.2.5's 4 and 23 combinations.

    >>> structures(2, extra_terms=2)
    (((0, 1),), ((0, 1), (0,)), ((0, 1), (1,)), ((0, 1), (0,), (1,)), ((0,), (1,)))
"""

from __future__ import annotations

import itertools
from functools import lru_cache

Structure = tuple[tuple[int, ...], ...]


def _partitions(items: list[int]) -> list[list[list[int]]]:
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out = []
    for part in _partitions(rest):
        out.append([[first], *part])
        for i in range(len(part)):
            out.append([*part[:i], [first, *part[i]], *part[i + 1:]])
    return out


@lru_cache(maxsize=32)
def structures(q: int, extra_terms: int = 2) -> tuple[Structure, ...]:
    """Every structure of parameters 0..q-1 (see the module docstring), the full product first."""
    out: list[Structure] = []
    parts = sorted(_partitions(list(range(q))), key=len)
    for part in parts:
        blocks = tuple(tuple(sorted(b)) for b in sorted(part, key=lambda b: (-len(b), b)))
        lower = [s for b in blocks for r in range(1, len(b)) for s in itertools.combinations(b, r)]
        for r in range(extra_terms + 1):
            for extra in itertools.combinations(lower, r):
                out.append(blocks + extra)
    return tuple(out)
