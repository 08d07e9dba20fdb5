"""Stage paper_mdanalysis: the reproduction of the MDAnalysis RMSD scaling study (seed 000, target
paper_mdanalysis)."""

from __future__ import annotations

from pathlib import Path

from perfsweep.reproduce.mdanalysis import reproduce_mdanalysis
from perfsweep.stages import PathLike, check_written


def run(data_dir: PathLike, scaling: PathLike, figure: PathLike, components: PathLike) -> None:
    """Writes every file into the folder of ``scaling``; the others name what the rule expects there."""
    reproduce_mdanalysis(data_dir, Path(scaling).parent)
    check_written(__name__, scaling, figure, components)
