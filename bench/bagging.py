"""Predictions averaged over the resamples' forms (Model.expected) against the formula's, on committed sweeps.

    .venv/bin/python bench/bagging.py                     # prints; bench/results/bagging.txt is its output

Each sweep's aggregates (bench/results/<set>/sweep*/tables) are fitted again by this checkout's models
stage (modeling.pipeline.fit_study_models) with ``--resamples`` resamples per model (40 and 160 by
default), and judged at the sweep's held-back points (bench/replicates.py's HELD_BACK, measured right
after the sweep): per study and set how far the three sweeps' predictions lie apart (largest over
smallest, minus 1) for the formula (Model.predict) and for the prediction averaged over the resamples'
forms (Model.expected, the geometric mean of the resampled models' predictions: bagging, Breiman 1996),
their errors, and how often the 90 % interval (centred on the averaged prediction) covered. The sets are
sweeps measured before this change (bench/results/replicates/<commit>-quiet and -busy of commits
f301cd1, 0aeb32f and c00a469; bagging.txt names them as their trees were named then,
replicates_<commit>/quiet); they chose the method and the number of resamples, and how the
interval's terms are joined where the host was quiet at every point of a model (Model.quiet: the
largest of them, else added; both are printed), so they do not report its accuracy: fresh sweeps do
(bench/replicates.py). No sweep is made here (about a minute per set at 160
resamples).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import replicates as R  # noqa: E402 (the bench folder is not a package)

from perfsweep.modeling.model import Model  # noqa: E402
from perfsweep.modeling.pipeline import fit_study_models  # noqa: E402

SETS = ("replicates/f301cd1-quiet", "replicates/0aeb32f-quiet", "replicates/c00a469-quiet",
        "replicates/f301cd1-busy", "replicates/0aeb32f-busy", "replicates/c00a469-busy")


def refit(sweep: Path, name: str, study: dict, resamples: int) -> tuple[Model, pd.DataFrame]:
    """The study's run-time model fitted again from the sweep's aggregate, and its held-back points
    (validation.evaluate: ``predicted`` is the averaged prediction) with the formula's beside."""
    agg = R.csv(sweep, f"tables/{name}/aggregate.csv")
    varied = list(study["vary"])
    design = study.get("design", {}).get("kind", "full")
    _, entries, _ = fit_study_models(agg, name, varied, study.get("fixed", {}), "p", bootstrap=resamples, design=design)
    (entry,) = [e for e in entries if e["region"] == "all" and e["metric"] == "time"]
    model = Model.from_dict(entry["model"])
    at = R.held_back(model, sweep / "heldback", name)
    at["formula"] = model.predict(at[varied].to_numpy(float))
    return model, at


def judge(name_set: str, config: dict, resamples: int) -> list[str]:
    sweeps = sorted((REPO / "bench" / "results" / name_set).glob("sweep*"))
    lines = [f"## {name_set}: {len(sweeps)} sweeps, {resamples} resamples per model"]
    apart = {"formula": [], "averaged": []}
    covered, widths, errors = [], [], {"formula": [], "averaged": []}
    added, added_widths, quiet = [], [], 0
    for name in R.HELD_BACK:
        got = [refit(s, name, config["studies"][name], resamples) for s in sweeps]
        text = []
        for key, column in (("formula", "formula"), ("averaged", "predicted")):
            preds = np.array([at[column].to_numpy(float) for _, at in got])
            a = R.apart(preds)
            apart[key] += list(a)
            err = [float(np.median(np.abs(at[column] / at["measured"] - 1))) for _, at in got]
            errors[key] += err
            text.append(f"{key} apart {' '.join(f'{v:.1%}' for v in a)} (errors {' '.join(f'{e:.1%}' for e in err)})")
        for model, at in got:
            covered += list(at["covered"])
            widths += list(at["width"])
            summed = replace(model, quiet=False)  # the terms added, as where a point was disturbed
            x = at[list(model.param_names)].to_numpy(float)
            low, high = summed.interval(x, R.LEVEL)
            added += list((at["measured"] >= low) & (at["measured"] <= high))
            added_widths += list((high - low) / at["predicted"])  # (the same centre: the same resamples)
            quiet += model.quiet
        lines.append(f"  {name:14s} " + "; ".join(text))
        lines.append(f"  {'':14s} forms: " + " | ".join(m.lead() for m, _ in got))
    for key in ("formula", "averaged"):
        a = np.array(apart[key])
        lines.append(f"  {key}: within 10 % of each other at {np.mean(a <= 0.10):.0%} of {len(a)} points, within 15 % at "
                     f"{np.mean(a <= 0.15):.0%}; worst study-sweep median error {max(errors[key]):.1%}")
    lines.append(f"  90 % intervals (centred on the averaged prediction) covered {np.mean(covered):.0%} of {len(covered)}, "
                 f"median width {np.median(widths):.0%} ({quiet} of {len(R.HELD_BACK) * len(sweeps)} models "
                 f"quiet at every point: their terms' largest); with the terms added everywhere "
                 f"{np.mean(added):.0%}, median width {np.median(added_widths):.0%}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resamples", type=int, nargs="+", default=[40, 160])
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for resamples in args.resamples:
        for name_set in args.sets:
            print("\n".join(judge(name_set, config, resamples)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
