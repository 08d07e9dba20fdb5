"""Is what the models leave around the medians noise, or the app? The default sweep's p = 1 studies, in
committed sweeps (bench/replicates.py --out), fitted with a form close to ljmd's work law (not a PMNF
search: T(n, m) = a + b n + c n m + d n m^2; T(n, m, c) = a + b n + e n m^2 + f n c^3 + g n m^2 c^3, by
relative least squares), and the relative residuals of every configuration that all sweeps measured set
side by side. Where they are noise, the sweeps' residuals are uncorrelated; where the same configuration
lies above or below the smooth law in every sweep, the app's time is not smooth at that level (likely ljmd's
cell lists: floor(box / reach) cells per side, all pairs below 3), and no form of any search fits it
within the repetitions' noise, however often it is measured. Last, the lack-of-fit test by which
measuring until decided stops taking repetitions (perfsweep.steps.decide.lack_of_fit_of), on each sweep's final
model of every study.

    .venv/bin/python bench/lack_of_fit.py bench/results/replicates/faf914e-quiet bench/results/replicates/15dbcfd-busy
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replicates  # noqa: E402 (the bench folder is not a package)
from perfsweep.modeling.model import Model  # noqa: E402
from perfsweep.steps import decide  # noqa: E402

FORMS = {
    "T_n_m": lambda n, m, c: [n, n * m, n * m ** 2],
    "T_n_m_c": lambda n, m, c: [n, n * m ** 2, n * c ** 3, n * m ** 2 * c ** 3],
}


def residuals(root: Path, study: str) -> tuple[pd.Series, float] | None:
    agg = replicates.csv(root, f"tables/{study}/aggregate.csv")
    if agg is None:
        return None
    t = agg[(agg["region"] == "all") & (agg["metric"] == "time") & ~agg["validation"].astype(bool)]
    n, m = t["n"].to_numpy(float), t["m"].to_numpy(float)
    c = t["c"].to_numpy(float) if "c" in t else np.zeros_like(n)
    y = t["median"].to_numpy(float)
    x = np.column_stack([np.ones_like(n), *FORMS[study](n, m, c)])
    coef = np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)[0]
    fit = x @ coef
    reps = [np.array(v.split(), float) for v in t["values"]]
    se = np.median([np.std(r, ddof=1) / np.sqrt(len(r)) / np.median(r) for r in reps if len(r) > 1])
    return pd.Series((y - fit) / fit, index=t["config_id"].to_numpy()), float(se)


def main() -> int:
    dirs = [Path(d) for d in sys.argv[1:]]
    for study in FORMS:
        cols, ses = {}, {}
        for d in dirs:
            for sweep in sorted(d.glob("sweep*")):
                got = residuals(sweep, study)
                if got is not None:
                    key = f"{d.name}/{sweep.name}"
                    cols[key], ses[key] = got
        table = pd.DataFrame(cols).dropna()
        print(f"## {study}: {len(table)} configurations in all {len(cols)} sweeps; residuals of the smooth law, %")
        print((100 * table).round(1).to_string())
        rms = np.sqrt((table ** 2).mean())
        print("root mean square, %: " + ", ".join(f"{k} {100 * v:.1f}" for k, v in rms.items()))
        print("the medians' standard error from their repetitions (median), %: "
              + ", ".join(f"{k} {100 * v:.1f}" for k, v in ses.items()))
        corr = table.corr().to_numpy()
        off = corr[~np.eye(len(corr), dtype=bool)]
        print(f"correlation of the sweeps' residuals, pairwise: median {np.median(off):.2f}, "
              f"range {off.min():.2f}-{off.max():.2f}")
        print()
    print("## the lack-of-fit test of measuring until decided (perfsweep.steps.decide.lack_of_fit_of), final models")
    print("(the best of the model's, its alternatives' and its resamples' forms, each fitted again to the medians by")
    print(" relative least squares; the noise a median's standard error;")
    print(f" p < {decide.MISFIT_P}: more repetitions are not taken, measuring ends 'lack of fit' where no new point is worth its runs;")
    print(" not judged so where the host was busy: disturbed configurations are measured again first)")
    for d in dirs:
        for sweep in sorted(d.glob("sweep*")):
            for study in STUDIES:
                got = final_misfit(sweep, study)
                if got is not None:
                    share, f = got
                    print(f"{d.name}/{sweep.name} {study}: lead share {share:.2f}; misfit {100 * f['misfit']:.1f} %, noise "
                          f"{100 * f['noise']:.1f} %, F {f['F']:.1f}, p {f['p']:.1g}: "
                          + ("no smooth form fits" if f["p"] < decide.MISFIT_P else "within the noise's reach"))
    return 0


STUDIES = ("T_n_m", "T_n_m_c", "T_n_p", "rmsd_frames_p")


def final_misfit(root: Path, study: str):
    """(lead share, decide.lack_of_fit_of) of the sweep's final run-time model of ``study`` and its aggregate's
    repetitions, or None."""
    agg = replicates.csv(root, f"tables/{study}/aggregate.csv")
    path = root / "models" / study / "models.json.gz"
    if agg is None or not path.exists():
        return None
    entry = [m for m in json.loads(gzip.open(path).read()) if m["region"] == "all" and m["metric"] == "time"]
    if not entry or not entry[0].get("model"):
        return None
    model = Model.from_dict(entry[0]["model"])
    t = agg[(agg["region"] == "all") & (agg["metric"] == "time") & ~agg["validation"].astype(bool)]
    got = decide.lack_of_fit_of(model, [[float(v) for v in str(s).split()] for s in t["values"]])
    return None if got is None else (model.lead_share, got)


if __name__ == "__main__":
    sys.exit(main())
