"""Stage overhead: Höfinger's overhead model per combination of the study's other varied parameters
(seed 003), for a study that varies the process count."""

from __future__ import annotations

from perfsweep import tables
from perfsweep.overhead import fit_per_group
from perfsweep.plots.overhead import overhead_grid
from perfsweep.stages import PathLike, read, stem


def run(medians: PathLike, fits: PathLike, curves: PathLike, figure: PathLike, varied: list[str],
        processes: str, study: str) -> None:
    others = [v for v in varied if v != processes]
    fit_df, curve_df, results = fit_per_group(read(medians), processes, "median", others)
    tables.write_table(fit_df, stem(fits), caption=f"Overhead model per group, study {study}")
    curve_df.to_csv(curves, index=False)
    overhead_grid(results, study, figure)
