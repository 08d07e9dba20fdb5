"""Stage collect: a study's run records -> tidy tables, one row per run, per rank and per region."""

from __future__ import annotations

from typing import Iterable

from perfsweep import tables
from perfsweep.values import PathLike


def run(records: Iterable[PathLike], runs: PathLike, ranks: PathLike, regions: PathLike,
        validation: Iterable[str] = ()) -> None:
    """``validation``: the config ids of the study's validation points (runs.csv marks their runs)."""
    runs_df, ranks_df, regions_df = tables.collect(records, validation)
    runs_df.to_csv(runs, index=False)
    ranks_df.to_csv(ranks, index=False)
    regions_df.to_csv(regions, index=False)
