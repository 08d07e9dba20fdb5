"""Stage paper_hofinger: the reproduction of seed 003's WIEN2k/NWCHEM analysis (target paper_hofinger)."""

from __future__ import annotations

from pathlib import Path

from perfsweep.reproduce.hofinger import reproduce_hofinger
from perfsweep.stages import PathLike, check_written


def run(table: PathLike, note: PathLike, fits: PathLike, triples: PathLike, top: PathLike, overhead: PathLike,
        figure: PathLike) -> None:
    """Writes every file into the folder of ``note``; the others name what the rule expects there."""
    reproduce_hofinger(table, Path(note).parent)
    check_written(__name__, note, fits, triples, top, overhead, figure)
