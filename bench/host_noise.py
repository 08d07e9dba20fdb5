"""How noisy is this machine for short runs? The run-to-run variation of one ljmd configuration, launched
as perfsweep launches it, at two run lengths, and what it means for the CV target of issue 17.

    .venv/bin/python bench/host_noise.py [--runs 8] [--steps 60] [--n 400] [--m 4]

Runs the same configuration ``--runs`` times at ``--steps`` and at 4x as many steps, interleaved (so
both lengths see the same moments of the machine), and prints per length the mean application time
and the CV of the runs. With per-run noise sigma, two repetitions have a CV below 10 % with probability
erf(0.1 / (sigma sqrt 2)) (|a - b| / (sqrt 2 mean) ~ sigma |Z|): that is the share of configurations of
a sweep with k = 2 that can meet "CV < 10 %" on this machine at that run length, whatever perfsweep
does. More repetitions estimate sigma better; they do not lower it. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def one_run(steps: int, n: int, m: int, report: Path) -> float:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    cmd = [str(mpiexec), "-n", "1", sys.executable, "-m", "perfsweep.apps.ljmd", "--n", str(n), "--m", str(m),
           "--d", "0.5", "--c", "2.0", "--steps", str(steps), "--report", str(report)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return float(json.loads(report.read_text())["time"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60, help="the default config's ljmd steps")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--m", type=int, default=4)
    args = ap.parse_args()
    lengths = (args.steps, 4 * args.steps)
    times: dict[int, list[float]] = {s: [] for s in lengths}
    print(f"ljmd n={args.n} m={args.m} d=0.5 c=2: {args.runs} runs at {lengths[0]} and {lengths[1]} steps, "
          f"interleaved; load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for steps in lengths:
                times[steps].append(one_run(steps, args.n, args.m, Path(tmp) / "report.json"))
    for steps, ts in times.items():
        mean = statistics.mean(ts)
        sigma = statistics.stdev(ts) / mean
        share = math.erf(0.1 / (sigma * math.sqrt(2))) if sigma > 0 else 1.0
        print(f"{steps:>5} steps: application time {mean:.3f} s, CV of the runs {sigma:.1%}; two repetitions "
              f"have a CV below 10 % with probability {share:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
