"""A configuration of a study and the canonical text of its parameter values (config ids, paths, launch
arguments): pure data, asked for by the config, the designs, the run specs and the records."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# a file's path as every function of perfsweep takes it (defined here, the bottom layer, and only here)
PathLike = str | os.PathLike[str]


def format_value(value: Any) -> str:
    """Canonical text of a parameter value, used in config ids and paths (2.0 -> '2', 0.5 -> '0.5')."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Configuration:
    """One point of a study's grid (or one of its validation points, ``validation``: measured like
    the others, never fitted): the full parameter set and its id (from the varied values)."""

    study: str
    config_id: str
    params: dict[str, Any]
    validation: bool = False
