"""Stage variability: coefficient of variation per configuration (seed 001, Table 1), and the study's
progress line for people following a long sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perfsweep import tables
from perfsweep.stages import PathLike, read, stem


def run(runs: PathLike, table: PathLike, summary: PathLike, varied: list[str],
        cv_threshold: float, study: str | None = None, disturbed: float | None = None,
        order: PathLike | None = None, remeasured: bool = False) -> None:
    """The variability table and summary (and the host load per configuration: ``disturbed``, config
    key variability.disturbed), and ``order``: every run in the order it ran (tables.run_order).
    ``remeasured``: the study is measured until decided (config key decide), which measures its mostly
    disturbed configurations again (perfsweep.steps.decide)."""
    table_of_runs = read(runs)
    var = tables.variability(table_of_runs, varied, cv_threshold, disturbed)
    tables.write_table(var, stem(table), caption="Coefficient of variation per configuration")
    summ = tables.variability_summary(var)
    summ.to_csv(summary, index=False)
    if order is not None:
        tables.run_order(table_of_runs, varied, disturbed).to_csv(order, index=False)
    print(progress_line(study or Path(table).parent.name, var, table_of_runs, runs, remeasured), flush=True)


def progress_line(study: str, var: pd.DataFrame, runs: pd.DataFrame | None = None, where: PathLike = "",
                  remeasured: bool = False) -> str:
    """One line per finished study for people following a long sweep; with failed runs, the first of
    them and where the others are listed (``runs``, the runs table at ``where``); with disturbed runs,
    whether the study measures them again (``remeasured``: measured until decided)."""
    total, failed = int(var["n_runs"].sum()), int(var["n_failed"].sum())
    line = f"perfsweep: study {study} measured: {total - failed}/{total} runs ok, {failed} failed"
    bad = runs[runs["status"] != "ok"] if runs is not None and "status" in runs else pd.DataFrame()
    if len(bad):
        first = bad.iloc[0]
        error = str(first.get("error", ""))
        line += (f" (e.g. {first['run_id']}: {first['status']}: {error[:80] + ('...' if len(error) > 80 else '')};"
                 f" every run's status and error: {where})")
    cv = var.dropna(subset=["cv"])
    if len(cv):
        worst = cv.loc[cv["cv"].idxmax()]
        line += (f"; worst CV {100 * worst['cv']:.1f} % ({worst['config_id']}),"
                 f" {int(var['flagged'].sum())} of {len(var)} configurations above"
                 f" {100 * var['cv_threshold'].iloc[0]:g} %")
    if "n_cut_short" in var and var["n_cut_short"].sum():
        by = (runs["cut_short_by"].dropna().str.split(",").explode().value_counts()
              if runs is not None and "cut_short_by" in runs else pd.Series(dtype=int))
        what = ", ".join(f"{state} {n}" for state, n in by.items())
        line += (f"; {int(var['n_cut_short'].sum())} attempt(s) cut short by SLURM{f' ({what})' if what else ''},"
                 " measured again")
    if "n_disturbed" in var and var["n_disturbed"].sum():
        again = ("configurations with mostly disturbed runs measured again while the decide budget lasts"
                 if remeasured else "not measured again")
        line += f"; {int(var['n_disturbed'].sum())} runs disturbed by other processes on their cores (flagged, {again})"
    return line
