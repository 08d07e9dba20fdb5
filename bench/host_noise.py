"""How noisy is this machine for short runs? The run-to-run variation of one ljmd configuration, launched
and recorded as perfsweep launches it, at two run lengths, beside the machine's own variation, and what
it means for the CV target of issue 17.

    .venv/bin/python bench/host_noise.py [--runs 8] [--steps N] [--n 400] [--m 4]

Runs the same configuration ``--runs`` times at ``--steps`` (default: config/config.yaml's) and at 4x as
many steps, with config/config.yaml's launcher (ranks pinned to cores), interleaved (so
both lengths see the same moments of the machine), each through perfsweep's own launch and record
(perfsweep.sweep.run: RunSpec.build from a config, execute), and prints per length the mean application
time and the CV of the runs. With per-run noise sigma, two repetitions have a CV below 10 % with
probability erf(0.1 / (sigma sqrt 2)) (|a - b| / (sqrt 2 mean) ~ sigma |Z|): that is the share of
configurations of a sweep with k = 2 that can meet "CV < 10 %" on this machine at that run length,
whatever perfsweep does. More repetitions estimate sigma better; they do not lower it.

Between the runs, the bench times a fixed pure-Python loop (no numpy, no MPI, no memory traffic: 20-50
ms of one core's integer work) in its own process: the CV of those timings is the machine's own
speed variation, which no launcher, app or config can remove. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

from perfsweep.config import SweepConfig, load_config, load_config_file
from perfsweep.layout import REPO_ROOT
from perfsweep.sweep.run import execute
from perfsweep.sweep.spec import RunSpec

DEFAULT = load_config_file(REPO_ROOT / "config" / "config.yaml")  # its launcher and ljmd steps

PROBE_ITERATIONS = 300_000  # the pure-Python loop: 19-50 ms here, by the moment
PROBES_PER_RUN = 3


def sweep_config(steps: int, n: int, m: int, results: str) -> SweepConfig:
    """A one-study config of the default's ljmd, launched as the default config launches it (pinned ranks),
    at this run length (its first configuration is measured)."""
    return load_config({
        "app": {"name": "ljmd", "args": {"steps": steps}},
        "launcher": DEFAULT.launcher,
        "parameters": {"n": n, "m": m, "d": 0.5, "c": 2.0, "p": 1},
        "results": results,
        "studies": {"noise": {"vary": {"c": [2.0, 2.25]}}},  # a study varies >= 2 values; c = 2 is measured
    }, "bench/host_noise.py")


def probe() -> float:
    """Seconds of a fixed pure-Python loop."""
    t0 = time.perf_counter()
    total = 0
    for k in range(PROBE_ITERATIONS):
        total += k
    return time.perf_counter() - t0


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=DEFAULT.app["args"]["steps"],
                    help="ljmd steps (default: the default config's)")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--m", type=int, default=4)
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs: at least 2 (a CV needs two runs)")
    lengths = (args.steps, 4 * args.steps)
    times: dict[int, list[float]] = {s: [] for s in lengths}
    probes: list[float] = []
    print(f"ljmd n={args.n} m={args.m} d=0.5 c=2: {args.runs} runs at {lengths[0]} and {lengths[1]} steps, "
          f"interleaved, launched as perfsweep launches them; load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="perfsweep-host-noise-") as tmp:
        specs = {}
        for steps in lengths:
            sweep = sweep_config(steps, args.n, args.m, f"{tmp}/results-{steps}")
            specs[steps] = (sweep, sweep.studies[0].configurations()[0])
        for rep in range(1, args.runs + 1):
            for steps in lengths:
                probes += [probe() for _ in range(PROBES_PER_RUN)]
                sweep, cfg = specs[steps]
                record = execute(RunSpec.build(sweep, cfg, rep), f"{tmp}/run-{steps}-{rep}.json")
                if record["status"] != "ok":
                    sys.exit(f"bench/host_noise.py: run {steps} steps #{rep} {record['status']}: {record['error']}")
                times[steps].append(float(record["time"]))
    for steps, ts in times.items():
        sigma = cv(ts)
        share = math.erf(0.1 / (sigma * math.sqrt(2))) if sigma > 0 else 1.0
        print(f"{steps:>5} steps: application time {statistics.mean(ts):.3f} s, CV of the runs {sigma:.1%}; two "
              f"repetitions have a CV below 10 % with probability {share:.0%}")
    print(f"the machine itself: a fixed pure-Python loop timed {len(probes)} times between the runs: median "
          f"{statistics.median(probes) * 1e3:.1f} ms, CV {cv(probes):.1%}, slowest / fastest "
          f"{max(probes) / min(probes):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
