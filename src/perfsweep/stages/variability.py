"""Stage variability: coefficient of variation per configuration (seed 001, Table 1), and the study's
progress line for people following a long sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perfsweep import tables
from perfsweep.stages import PathLike, read, stem


def run(runs: PathLike, table: PathLike, summary: PathLike, varied: list[str],
        cv_threshold: float, study: str | None = None) -> None:
    var = tables.variability(read(runs), varied, cv_threshold)
    tables.write_table(var, stem(table), caption="Coefficient of variation per configuration")
    summ = tables.variability_summary(var)
    summ.to_csv(summary, index=False)
    print(progress_line(study or Path(table).parent.name, var), flush=True)


def progress_line(study: str, var: pd.DataFrame) -> str:
    """One line per finished study for people following a long sweep."""
    runs, failed = int(var["n_runs"].sum()), int(var["n_failed"].sum())
    line = f"perfsweep: study {study} measured: {runs - failed}/{runs} runs ok, {failed} failed"
    cv = var.dropna(subset=["cv"])
    if len(cv):
        worst = cv.loc[cv["cv"].idxmax()]
        line += (f"; worst CV {100 * worst['cv']:.1f} % ({worst['config_id']}),"
                 f" {int(var['flagged'].sum())} of {len(var)} configurations above"
                 f" {100 * var['cv_threshold'].iloc[0]:g} %")
    return line
