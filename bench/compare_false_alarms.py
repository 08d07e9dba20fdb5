"""How often ``perfsweep compare`` fails a replicate: the gate's false-alarm rate on seeded synthetic sweeps.

    .venv/bin/python bench/compare_false_alarms.py > bench/results/compare_false_alarms.txt
    .venv/bin/python bench/compare_false_alarms.py --trials 40 --setting 0.02,0.02   # a quick look

Each trial judges two sweeps of the same code (tests/test_compare_sweeps.py's synthetic_side: one study of
n, six sizes x 5 repetitions, regions r0..r5 of time c_k * n and their sum 'all', models fitted as the
pipeline fits them) against each other at compare's defaults (one baseline, threshold 5 %, alpha 0.05,
Holm over every gating row's ratio and scaling-class tests). A trial whose exit code is 1 is a false
alarm. Per setting: ``noise``, the log-normal spread of each run, and ``drift``, one log-normal factor per
configuration and sweep, shared by its regions and repetitions (the host's drift between configurations
measured at different times, which the repetitions of one configuration do not show). Printed: the
alarms with their Wilson 95 % interval, what gated (a ratio, a scaling class), and how many trials any
gating row's uncorrected p-value (ratio or scaling class) below alpha would have failed.

Seeded (the seed of trial t's two sides: seed + 2t, seed + 2t + 1): run again at the same commit it
prints the same figures. tests/test_compare_gate.py runs its smallest setting.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

SETTINGS = [(0.02, 0.0), (0.02, 0.02), (0.04, 0.03)]


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def false_alarms(work: Path, noise: float, drift: float, trials: int, seed: int) -> dict:
    """``trials`` replicate comparisons of one setting: the alarms, what gated, the uncorrected count."""
    from perfsweep.compare import judge, load
    from test_compare_sweeps import synthetic_side

    alarms = ratio = scaling = uncorrected = 0
    for t in range(trials):
        a = synthetic_side(work, f"a{noise}-{drift}-{t}", {}, noise=noise, seed=seed + 2 * t, drift=drift)
        b = synthetic_side(work, f"b{noise}-{drift}-{t}", {}, noise=noise, seed=seed + 2 * t + 1, drift=drift)
        r = judge.compare(load.load_side(a), load.load_side(b))
        gating = [x for x in r.rows if x.gates()]
        alarms += r.exit_code() == 1
        ratio += any(x.verdict in ("regression", "improvement") for x in gating)
        scaling += any(x.scaling == "worse" for x in gating)
        uncorrected += any(x.gated and (x.p_value < r.alpha or x.p_scaling < r.alpha) for x in r.rows)
    return {"noise": noise, "drift": drift, "trials": trials, "alarms": alarms, "ratio": ratio, "scaling": scaling,
            "uncorrected": uncorrected}


def line(s: dict) -> str:
    low, high = wilson(s["alarms"], s["trials"])
    return (f"noise {s['noise']:.0%}, drift {s['drift']:.0%}: {s['alarms']} false alarms of {s['trials']} "
            f"({s['alarms'] / s['trials']:.1%}, 95 % interval {low:.1%}-{high:.1%}); a ratio gated in {s['ratio']}, "
            f"a scaling class in {s['scaling']}; uncorrected p-values would have failed {s['uncorrected']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3000)
    ap.add_argument("--setting", action="append", help="noise,drift (fractions); repeatable; default: "
                    + "; ".join(f"{n},{d}" for n, d in SETTINGS))
    args = ap.parse_args()
    settings = [tuple(float(v) for v in s.split(",")) for s in args.setting] if args.setting else SETTINGS
    print(f"# perfsweep compare on replicates, one baseline, alpha 0.05 (Holm): {args.trials} seeded trials per "
          f"setting, seed {args.seed}")
    start = time.time()
    for noise, drift in settings:
        with tempfile.TemporaryDirectory() as tmp:
            print(line(false_alarms(Path(tmp), noise, drift, args.trials, args.seed)), flush=True)
    print(f"# {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
