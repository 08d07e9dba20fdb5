"""The argument types the subcommands share: a count of at least 1, a fraction, a confidence level, a
number of seconds; each an argparse type whose error is one line (perfsweep.cli's parser); and the labels
of a sweep in the history store (``--label NAME=VALUE``)."""

from __future__ import annotations

import argparse
import math

from perfsweep.errors import UserError

DEFAULT_CONFIG = "config/config.yaml"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1")
    return value


def unit_interval(closed: bool, what: str):
    """An argparse type: a number in (0, 1] (closed) or (0, 1)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0 < value <= 1 if closed else 0 < value < 1):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return parse


fraction = unit_interval(True, "a number in (0, 1]")
level = unit_interval(False, "a confidence level in (0, 1), e.g. 0.9")


def seconds(text: str) -> float:
    """A number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0")
    return value


def parse_labels(items: list[str]) -> dict[str, str]:
    """``["branch=main", ...]`` -> {"branch": "main"}."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--label {item!r}: give NAME=VALUE (e.g. branch=main)")
        out[name.strip()] = value.strip()
    return out
