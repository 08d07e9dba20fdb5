"""Stage models: PMNF models per (region, metric) of a study (seed 001 §3.3): table (CSV, Markdown,
LaTeX), models.json (with the process-count parameter, so `perfsweep recommend` need not ask),
predictions and, of the study's validation points (never fitted), each model's prediction against the
measurement (validation.csv)."""

from __future__ import annotations

import json
from pathlib import Path

from perfsweep import tables
from perfsweep.modeling.pipeline import fit_study_models
from perfsweep.modeling.validation import is_validation
from perfsweep.sweep.designs import Decide
from perfsweep.sweep.plan import measuring_ended
from perfsweep.stages import PathLike, read, stem


def run(aggregate: PathLike, table: PathLike, models_json: PathLike, predictions: PathLike,
        varied: list[str], fixed: dict, processes: str, study: str, design: str = "full",
        modeling: dict | None = None, validation: PathLike | None = None, decide: dict | None = None,
        decide_state: PathLike | None = None) -> None:
    """With ``decide`` (the study's config decide:, measured until decided), the run-time model's row
    of the table and its models.json entry say in ``measuring`` how measuring ended (``decide_state``:
    the rounds' plan/<study>/decide.json)."""
    agg = read(aggregate)
    tab, mods, preds = fit_study_models(agg, study, varied, fixed, processes, design=design, modeling=modeling)
    if decide is not None:
        busy, fitted = tables.busy_configurations(agg)
        tab, mods = _measuring(tab, mods, decide, decide_state, (len(busy), fitted))
    tables.write_table(tab.drop(columns=["latex"]), stem(table), caption=f"Performance models of study {study}")
    with open(models_json, "w") as fh:
        json.dump(mods, fh, indent=1, allow_nan=False)  # strict JSON: undefined statistics are null
    preds.to_csv(predictions, index=False)
    if validation is not None:
        preds[is_validation(preds)].drop(columns=["validation"], errors="ignore").to_csv(validation, index=False)
    main = tab[(tab["region"] == "all") & (tab["metric"] == "time")]
    if len(main):
        r = main.iloc[0]
        text = r["model"] or f"no model ({r['reason']})"
        notes = str(r.get("notes") or "") if r["model"] else ""
        undecided = next((n for n in notes.split("; ") if n.startswith("form undecided")), "")
        if undecided:  # the data cannot decide: say so instead of a formula that reads as known
            print(f"perfsweep: study {study} model: T({', '.join(varied)}): {undecided} "
                  f"(reported {text}, see {Path(table).with_suffix('.md')})", flush=True)
        else:
            print(f"perfsweep: study {study} model: T({', '.join(varied)}) = {text}"
                  + (f"  (adj. R^2 {r['adj_r2']:.3f})" if r["model"] else ""), flush=True)
        if r.get("measuring"):
            print(f"perfsweep: study {study}: measuring until decided: {r['measuring']}", flush=True)
        if r["model"] and r["validation_points"] > 0:
            print(f"perfsweep: study {study}: at {r['validation_points']:.0f} validation point(s) a median error of "
                  f"{100 * r['validation_median_error']:.1f} %, {100 * r['validation_coverage']:.0f} % covered by the "
                  f"90 % interval (median width {100 * r.get('validation_width', float('nan')):.0f} % of the value)",
                  flush=True)


def _measuring(tab, mods: list[dict], decide: dict, state_path: PathLike | None, busy: tuple[int, int] = (0, 0)):
    """The models table with a ``measuring`` column, filled in the run-time model's row (region all,
    metric time) with how measuring until decided ended (perfsweep.sweep.plan.measuring_ended; ``busy``:
    how many of the fitted configurations have runs mostly disturbed, of how many), and the same
    in that model's models.json entry."""
    state = json.loads(Path(state_path).read_text()) if state_path and Path(state_path).is_file() else {}
    tab = tab.assign(measuring="")
    main = (tab["region"] == "all") & (tab["metric"] == "time") & (tab["model"].fillna("") != "")
    for i in tab.index[main]:
        r = tab.loc[i]
        line = measuring_ended(Decide(**decide), float(r["lead_share"]), float(r["validation_width"]),
                               r["validation_points"] > 0, state, busy)
        tab.loc[i, "measuring"] = line
        for m in mods:
            if m.get("region") == "all" and m.get("metric") == "time":
                m["measuring"] = line
    return tab, mods
