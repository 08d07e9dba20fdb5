"""Stage models_summary: the run-time models of all studies in the shape of seed 001's Tables 2 (two
varied parameters) and 3 (three): model, fixed parameters, formula, adjusted R^2, and how the model
predicted the study's validation points (their number, the median relative error, the share its 90 %
interval covered, and the intervals' median width over the prediction); of studies measured until
decided (config decide:), how measuring ended."""

from __future__ import annotations

import pandas as pd

from perfsweep import tables
from perfsweep.stages import PathLike, read, stem


def run(models: list[PathLike], summary: PathLike) -> None:
    """Writes summary and one summary_<k>p table per number k of varied parameters."""
    frames = [read(p) for p in models]
    allm = pd.concat([f for f in frames if len(f)], ignore_index=True) if frames else pd.DataFrame()
    main = allm[(allm["region"] == "all") & (allm["metric"] == "time")].copy()
    main["parameters"] = main["varied"].str.count(",") + 1
    checks = {"validation_points": "validation points", "validation_median_error": "validation median error",
              "validation_coverage": "validation coverage", "validation_width": "interval width"}  # models.csv of a study without them: empty
    measured = ["measuring"] if "measuring" in main else []  # a study measured until decided: how it ended
    if measured:
        main["measuring"] = main["measuring"].fillna("")
    main = main.reindex(columns=[*main.columns, *(c for c in ("lead_share", "runner_up", *checks) if c not in main)])
    table = main.rename(columns={"model_name": "Model", "fixed": "Fixed parameters", "model": "Formula",
                                 "adj_r2": "adj. R^2", "lead_share": "lead share", "runner_up": "runner-up", **checks})[
        ["Model", "Fixed parameters", "Formula", "adj. R^2", "lead share", "runner-up", *measured, *checks.values(),
         "study", "parameters", "reason"]]
    tables.write_table(table, stem(summary), caption="Run-time models of all studies")
    for k, part in table.groupby("parameters"):
        tables.write_table(part.drop(columns=["parameters"]), f"{stem(summary)}_{k}p",
                           caption=f"{k}-parameter models of the execution time")
