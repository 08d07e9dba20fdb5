"""The config's ``modeling: {simplest_within: k}`` on committed sweeps: how often the run-time form is
decided (lead share >= 0.8), how many forms the sweeps hand over, and how the models predict the
held-back points, with k = 0 (the default: every data set takes its best form) and k = 1 (the simplest
form within one coefficient's penalty of the best), on the same data.

Each sweep kept by bench/replicates.py (--out) is fitted again from its final aggregate, as the models
stage fits it (fit_study_models, the design kinds of config/config.yaml), and judged at its held-back
runs (replicates.held_back). Nothing is measured: the sweeps' runs are the same for both rules (in a
sweep made with the rule, measuring until decided would have chosen other steps).

    .venv/bin/python bench/simplest_within.py bench/results/replicates/1fbe2f1-quiet ...   # dirs of sweeps
"""

from __future__ import annotations

import argparse
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import replicates  # noqa: E402 (the bench folder is not a package)

from perfsweep.modeling.model import Model  # noqa: E402
from perfsweep.modeling.pipeline import fit_study_models  # noqa: E402

DECIDED = 0.8


def studies() -> dict[str, tuple[list[str], dict, str]]:
    """Per study of the default config that bench/replicates.py holds back points of: (varied, fixed, design kind)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    out = {}
    for name, s in config["studies"].items():
        if name in replicates.HELD_BACK:
            design = s.get("design", config.get("design", "full"))
            out[name] = (list(s["vary"]), s.get("fixed", {}), design["kind"] if isinstance(design, dict) else design)
    return out


def judge(job: tuple[str, float]) -> list[dict]:
    """Every sweep of the directory ``job[0]`` fitted with simplest_within ``job[1]``: one row per study."""
    where, k = job
    rows = []
    warnings.simplefilter("ignore")
    kinds = studies()
    for sweep in sorted(Path(where).glob("sweep*")):
        for name, (varied, fixed, design) in kinds.items():
            agg = replicates.csv(sweep, f"tables/{name}/aggregate.csv")
            if agg is None:
                continue
            _, entries, _ = fit_study_models(agg, name, varied, fixed, "p", design=design,
                                             modeling={"simplest_within": k})
            (entry,) = [e for e in entries if e.get("region") == "all" and e.get("metric") == "time"]
            model = Model.from_dict(entry["model"])
            at = replicates.held_back(model, sweep / "heldback", name)
            err = (at["predicted"] / at["measured"] - 1).abs()
            rows.append({"sweeps": str(Path(where).relative_to(REPO)) if Path(where).is_absolute() else where,
                         "sweep": sweep.name, "study": name, "k": k, "lead": model.lead(),
                         "share": model.lead_share, "median_error": err.median(), "max_error": err.max(),
                         "covered": int(((at["measured"] >= at["low"]) & (at["measured"] <= at["high"])).sum()),
                         "points": len(at), "width": at["width"].median()})
    return rows


def summary(rows: pd.DataFrame, k: float) -> list[str]:
    out = []
    for group, g in rows.groupby("group", sort=False):
        out.append(f"## {group} ({g['sweeps'].nunique()} x 3 sweeps: {', '.join(g['sweeps'].unique())})")
        for study, h in g.groupby("study", sort=False):
            cols = []
            for rule in (0.0, k):
                r = h[h["k"] == rule]
                cols.append(f"k={rule:g}: decided {(r['share'] >= DECIDED).sum()}/{len(r)}, "
                            f"{r['lead'].nunique()} forms, error median {100 * r['median_error'].median():.1f} % "
                            f"max {100 * r['max_error'].max():.1f} %, covered {r['covered'].sum()}/{r['points'].sum()}, "
                            f"width {100 * r['width'].median():.0f} %")
            out.append(f"  {study}")
            out.extend(f"    {c}" for c in cols)
        for rule in (0.0, k):
            r = g[g["k"] == rule]
            bad = int(((r["share"] >= DECIDED) & (r["max_error"] > 0.3)).sum())
            out.append(f"  all studies, k={rule:g}: covered {r['covered'].sum()}/{r['points'].sum()} "
                       f"({100 * r['covered'].sum() / max(r['points'].sum(), 1):.0f} %), median width "
                       f"{100 * r['width'].median():.0f} %; forms decided and a held-back point missed by > 30 %: {bad}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="directories of sweep1..3 kept by bench/replicates.py --out")
    ap.add_argument("--k", type=float, default=1.0, help="simplest_within beside 0 (default 1)")
    ap.add_argument("--csv", help="also write every study-sweep's row here")
    args = ap.parse_args()
    jobs = [(d, rule) for d in args.dirs for rule in (0.0, args.k)]
    with ProcessPoolExecutor(2) as pool:
        rows = pd.DataFrame([r for part in pool.map(judge, jobs) for r in part])
    rows["group"] = np.where(rows["sweeps"].str.contains("busy"), "busy", "quiet")
    if args.csv:
        rows.drop(columns="group").to_csv(args.csv, index=False, float_format="%.4g")
    print("\n".join(summary(rows, args.k)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
