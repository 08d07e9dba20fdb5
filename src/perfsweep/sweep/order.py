"""The run order: every repetition round in a seeded random order (config key ``seed:``).

Repetitions run in rounds (every configuration's rep0 before any rep1; workflow/rules/common.smk). Within
a round the configurations of every study run in a random order drawn from the seed, so that a slow
minute of the host falls on configurations scattered over the grid (it widens the scatter the statistics
see) instead of on neighbouring sizes (where it bends the curve). A run's place is a hash of (seed,
round, study, configuration): the same seed gives the same order, and a point that an adaptive round
adds takes a place among the others without moving them relative to each other.

The workflow enforces the order by the run jobs' priority (Snakemake runs the highest first) and, on
SLURM, by each job's ``--nice`` (lower nice runs first): :func:`priorities`. It writes each study's
order to ``<results>/plan/<study>/order.json`` (:func:`write_orders`) before any run starts; the runner
copies a run's entry into its record as ``order`` (:func:`lookup`): ``{"seed", "round", "position",
"of"}``, position 0 the first of the round's ``of`` runs. With ``bundle: repetitions`` a configuration's
repetitions run back to back in one job: the bundles are ordered (round 0) and every repetition of a
bundle records the bundle's position. With variants (paired measurement, config key ``variants:``) the
variants of a configuration (studies ``<study>@<variant>``) take the configuration's place together and
run back to back, in a random order of their own within each round.

    order = run_order(1, [("nm", "n=200_m=1", 0), ("nm", "n=400_m=1", 0)])
    order[("nm", "n=200_m=1", 0)]    # {"seed": 1, "round": 0, "position": 1, "of": 2}
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from perfsweep.atomic import atomic_file
from perfsweep.layout import ORDER_FILE, parse_record, plan_file, split_variant, variants_file

Run = tuple[str, str, int]  # (study, config id, repetition)


def run_key(seed: int, round_: int, study: str, config_id: str) -> int:
    """A run's random place in its round: a 64-bit hash of (seed, round, study, configuration)."""
    text = json.dumps([seed, round_, study, config_id])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def run_order(seed: int, runs: Iterable[Run]) -> dict[Run, dict[str, int]]:
    """Every run's place: its round (its repetition), its position in the round's random order and the
    round's number of runs (``of``), with the seed."""
    rounds: dict[int, list[Run]] = defaultdict(list)
    for run in runs:
        rounds[run[2]].append(run)
    out: dict[Run, dict[str, int]] = {}
    for round_, members in rounds.items():
        members.sort(key=lambda r: _place(seed, round_, r))
        for position, run in enumerate(members):
            out[run] = {"seed": seed, "round": round_, "position": position, "of": len(members)}
    return out


def _place(seed: int, round_: int, run: Run) -> tuple:
    """Where a run goes in its round: the configuration's random place; the variants of one configuration
    (paired measurement: studies <study>@<variant>) share it and follow each other in a random order."""
    study, variant = split_variant(run[0])
    if variant is None:
        return (run_key(seed, round_, run[0], run[1]), 0, run[0], run[1])
    return (run_key(seed, round_, study, run[1]), run_key(seed, round_, run[0], run[1]), run[0], run[1])


def priorities(order: dict[Run, dict[str, int]]) -> dict[Run, int]:
    """Snakemake priorities (positive; higher runs first) that run every round before the next and
    each round in its order: (rounds after this one) x (largest round + 1) + (places after this run)."""
    if not order:
        return {}
    top = max(o["round"] for o in order.values())
    width = max(o["of"] for o in order.values()) + 1
    return {run: (top - o["round"]) * width + (o["of"] - o["position"]) for run, o in order.items()}


def nice_values(prio: dict[Run, int]) -> dict[Run, int]:
    """SLURM ``--nice`` of each run job (>= 0, as users may set it): the highest priority gets 0."""
    top = max(prio.values(), default=0)
    return {run: top - p for run, p in prio.items()}


def write_orders(results: str | Path, order: dict[Run, dict[str, int]]) -> None:
    """Each study's order to ``<results>/plan/<study>/order.json`` (``{"<config>/rep<k>": entry}``),
    written atomically and only where it changed (the runner reads it: :func:`lookup`)."""
    by_study: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for (study, config_id, rep), entry in sorted(order.items()):
        by_study[study][f"{config_id}/rep{rep}"] = entry
    for study, entries in by_study.items():  # compact: one line per study's runs
        _write_changed(plan_file(results, study, ORDER_FILE), json.dumps(entries, separators=(",", ":")) + "\n")


def write_variants(results: str | Path, variants: tuple[str, ...]) -> None:
    """A paired measurement's variants, in the config's order, to ``<results>/plan/variants.json``
    (perfsweep compare takes the first two as A and B); only where it changed."""
    if variants:
        _write_changed(variants_file(results), json.dumps({"variants": list(variants)}) + "\n")


def _write_changed(path: Path, text: str) -> None:
    """``text`` to ``path`` atomically, unless the file holds it already (its time stays: nothing reruns)."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    with atomic_file(path, "w") as fh:
        fh.write(text)


def lookup(record_path: str | Path) -> dict[str, Any] | None:
    """The order entry of the run whose record is ``record_path`` (None: no order file, or the run is
    not in it, as for records measured before the order was recorded)."""
    fields = parse_record(record_path)
    if not fields:
        return None
    try:
        entries = json.loads(plan_file(fields["results"], fields["study"], ORDER_FILE).read_text())
    except (OSError, ValueError):
        return None
    entry = entries.get(f"{fields['config_id']}/rep{fields['repetition']}") if isinstance(entries, dict) else None
    return entry if isinstance(entry, dict) else None
