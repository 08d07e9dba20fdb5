"""Paired sweeps (config key ``variants:``): the variants of an app measured in one sweep, each
configuration's variants back to back in every round, so the host's drift of that moment falls on both
runs of a pair and ``perfsweep compare RESULTS --variants A,B`` judges their ratio without it (two sweeps
run one after the other cannot cancel the drift: the two-sweep tests this replaces failed CI by it).

- ``paired_ljmd``: the tiny ljmd study T(n) (150 steps, n = 400-1200, as bench/compare_power.py's) with
  the known changes the compare tests assert, each a variant: ``before``; ``whole`` (steps 180: every
  step more work, the whole program 20 % slower); ``region`` (``slow-region forces=1.2``: the force
  region 20 % slower); ``copy`` (the same app as before: a replicate). bench/compare_power.py measured
  this design with 5 repetitions in ten trials on this host idle and ten while other work loaded it
  (load average 3.6-5; bench/results/compare_power): no false alarm of the replicates in 60, the region
  caught 20 of 20, the whole program 19 of 20 (the one miss: a trial whose minimum detectable effect,
  mde, the host had pushed above 20 %), median mde 1.4-1.9 %, and idle the neighbour region "no
  significant change" in every region trial.
  Here 4 repetitions first (20 pairs); the rule of paired_ljmd measures once more where the host spread
  them.
- ``paired_ljrate``: tests/apps/ljrate.c built with the venv's mpicc, s = 8, 12, 16, p = 1-3 (p = 3
  oversubscribed on 2 cores), 2 repetitions (compare pairs the 12 runs within the cores: a change of
  about 2x, timed in CPU time, judged with an mde of about 11 % beside five other sweeps);
  variants ``before`` and ``after`` (``-passes 2``: the forces computed twice a step, a slower build).

Both run ``perfsweep run --no-report`` to each variant's models only (no figures, no pages): the tests read
the run records, the tables, the models and ``perfsweep compare``."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from . import PERFSWEEP, Sweep, make_sweep

LJMD = {
    "app": {"name": "ljmd", "args": {"steps": 150}},
    "launcher": "{mpiexec} -n {p}",
    "parameters": {"n": 400, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
    "repetitions": 4,
    "timeout": 300,
    # (the first two are what ``perfsweep compare RESULTS`` judges without --variants)
    "variants": {"before": {}, "whole": {"args": {"steps": 180}}, "region": {"args": {"slow-region": "forces=1.2"}},
                 "copy": {}},
    "studies": {"T_n": {"vary": {"n": [400, 600, 800, 1000, 1200]}, "fixed": {"m": 1, "d": 0.5, "c": 2.0, "p": 1}}},
}
# the rows the timing tests assert a regression of, per variant judged against ``before``
CHANGED_ROWS = {"whole": ("all", "time"), "region": ("step/forces", "time")}
MDE_LIMIT = 0.10  # at most half the 20 % changes
MAX_REPETITIONS = 16  # what measuring once more may reach (4x the pairs: half the mde)

LJRATE_COMMAND = "{launcher} ./ljrate -s {s} -steps 20 -clock cpu"
LJRATE = {
    # -clock cpu: the ranks' CPU time outside MPI (tests/apps/ljrate.c): on this shared host the wall time of
    # the same run moved 20-100 % from one minute to the next, its CPU time outside MPI 1-4 %
    "app": {"command": LJRATE_COMMAND,
            "time_pattern": r"Loop time: ([0-9.eE+-]+) s",
            "patterns": {"timesteps_per_s": {"pattern": r"Performance: ([0-9.eE+-]+) timesteps/s",
                                             "unit": "steps/s", "better": "higher"}}},
    "parameters": {"s": 8, "p": 1},
    "repetitions": 2,
    "timeout": 120,
    "variants": {"before": {}, "after": {"command": LJRATE_COMMAND + " -passes 2"}},
    "studies": {"s_p": {"vary": {"s": [8, 12, 16], "p": [1, 2, 3]}}},
}


def models_targets(config: dict) -> tuple[str, ...]:
    """Each variant study's models.json (and with it its tables): the targets the tests read."""
    return tuple(f"results/models/{study}@{v}/models.json" for study in config["studies"] for v in config["variants"])


def compare_json(results, a: str, b: str) -> tuple[int, dict]:
    """``perfsweep compare RESULTS --variants A,B --format json``: its exit code and its JSON."""
    proc = subprocess.run([str(PERFSWEEP), "compare", str(results), "--variants", f"{a},{b}", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def mdes(results) -> dict[str, float]:
    """Per changed variant the mde of the row that carries its change (inf where compare gives none)."""
    out = {}
    for variant, key in CHANGED_ROWS.items():
        rows = {(r["region"], r["metric"]): r for r in compare_json(results, "before", variant)[1]["rows"]}
        out[variant] = rows[key]["mde"] if rows[key]["mde"] is not None else float("inf")
    return out


@pytest.fixture(scope="session")
def paired_ljmd(tmp_path_factory) -> Sweep:
    """The tiny ljmd study, variants before, whole (+20 %), region (forces +20 %) and copy, in one sweep.

    The rule of measuring once more, as a user does on reading the gate's "cannot resolve": where the row
    carrying a change (whole: all/time, region: step/forces/time) has an mde above 10 % after the first 4
    repetitions, every configuration gets the repetitions that bring the larger mde to 10 % (the mde
    falls like one over the square root of the pairs: 4 x (mde / 10 %)^2), at least 8 and at most 16;
    ``perfsweep run`` measures only the new rounds, each again with its variants back to back, and the
    tests assert on all of them. (At 10 % a 20 % change is twice the mde: caught with a power above
    99 %. bench/compare_power.py's median mdes, idle and busy, were 1.4-1.9 %: no second measurement. Beside five other
    sweeps on these 2 cores, load average 4-4.5, this sweep saw an mde of 24 % after 4 and 16 % after 8,
    and the whole run's ratio 1.20 [1.10, 1.31] was then still inconclusive.) The mdes of both
    measurements are kept in ``sweep.mdes`` (a test failure shows them) and in mdes.json beside the
    config."""
    config = json.loads(json.dumps(LJMD))
    targets = models_targets(config)
    sweep = make_sweep(tmp_path_factory.mktemp("paired_ljmd"), config, "--cores", "2", "--no-report", targets=targets)
    sweep.mdes = [mdes(sweep.results)]
    worst = max(sweep.mdes[0].values())
    if worst > MDE_LIMIT:
        first = config["repetitions"]
        more = min(MAX_REPETITIONS, max(2 * first, math.ceil(first * (worst / MDE_LIMIT) ** 2)))
        sweep.write_config({**sweep.config, "repetitions": more})
        sweep.run("--cores", "2", "--no-report", targets=targets)
        sweep.mdes.append(mdes(sweep.results))
    (sweep.work / "mdes.json").write_text(json.dumps(sweep.mdes))
    return sweep


@pytest.fixture(scope="session")
def paired_ljrate(tmp_path_factory) -> Sweep:
    """ljrate built with the venv's mpicc in the work directory, variants before and after (-passes 2).
    tests/test_compiled_app.py's ``build`` skips where the venv's mpicc cannot build it."""
    from test_compiled_app import build  # one place says how ljrate is built and when it cannot be

    work = tmp_path_factory.mktemp("paired_ljrate")
    build(work)
    config = json.loads(json.dumps(LJRATE))
    return make_sweep(work, config, "--no-report", targets=models_targets(config))
