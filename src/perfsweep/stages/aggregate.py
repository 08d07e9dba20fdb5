"""Stage aggregate: median, min, mean, std and n_ok per configuration (and per region and phase)."""

from __future__ import annotations

from perfsweep import tables
from perfsweep.apps.registry import PROCESS_COUNT
from perfsweep.stages import PathLike, read, stem


def run(runs: PathLike, ranks: PathLike, regions: PathLike, variability: PathLike,
        aggregate: PathLike, medians: PathLike, varied: list[str], policy: str, records: str | None = None,
        processes: str = PROCESS_COUNT, disturbed: float | None = None) -> None:
    agg = tables.aggregate(read(runs), read(ranks), read(regions), varied, read(variability), policy, records,
                           processes, disturbed)
    agg.to_csv(aggregate, index=False)
    tables.write_table(tables.medians_wide(agg, varied), stem(medians),
                       caption="Median run time per configuration")
