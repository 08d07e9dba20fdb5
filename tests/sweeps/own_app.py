"""Sweeps of a user's own app (not a built-in one), each run once per test session:

- ``own_app_doc_sweep``: the own-application example of docs/how-to/own-app.md run as written
  (``perfsweep run my_app.yaml``, with its report) on a stand-in app with real MPI ranks
  (tests/apps/loop_time_app.py): 5 x 3 configurations x 3 repetitions in 3 rounds, in the order drawn
  from the default seed 1. Its shape is the doc's: the file and the command as a user copies them.
  Read by tests/test_own_app.py (the example runs as written) and tests/test_order.py (the rounds and
  their order as the records say they ran: every run holds every core, so they start one by one in
  their priorities' order).
- ``own_apps_bundled``: two own apps in one sweep with ``bundle: repetitions`` (the k repetitions of a
  configuration in one job), ``perfsweep run --no-report`` to the outputs the tests read only:
  ``mm``, the Score-P stand-in (tests/apps/scorep_standin.py) whose call paths become regions with
  models (its models and tables; tests/test_scorep_app.py), and ``abcd``, an app of four parameters on
  a sparse design whose model figure shows three of them (its figures; tests/test_own_app.py).

tests/README.md lists the tests that read them; a test that changes a tree works on a copy."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import BIN, REPO
from . import PERFSWEEP, Sweep, make_sweep
from .lane import session_sweep

TESTS = REPO / "tests"
OWN_APP_DOC = REPO / "docs" / "how-to" / "own-app.md"
LOOP_APP = TESTS / "apps" / "loop_time_app.py"
STANDIN = TESTS / "apps" / "scorep_standin.py"
TEMPLATE = TESTS / "data" / "extrap" / "cubeset" / "single_parameter" / "mm.x1y1z1.r1" / "profile.cubex"


def readme_block(kind: str, first_line: str) -> str:
    """docs/how-to/own-app.md's fenced ``kind`` block that starts with ``first_line``."""
    for block in re.findall(rf"```{kind}\n(.*?)```", OWN_APP_DOC.read_text(), re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"{OWN_APP_DOC.name} has no ```{kind} block starting with {first_line!r}")


def write_user_dir(where: Path) -> Path:
    """A user's directory: ./my_app (the stand-in), my_app.yaml and sample.txt from docs/how-to/own-app.md."""
    where.mkdir(parents=True, exist_ok=True)
    app = where / "my_app"
    app.write_text(f"#!/bin/sh\nexec {sys.executable} {LOOP_APP} \"$@\"\n")
    app.chmod(app.stat().st_mode | stat.S_IXUSR)
    (where / "my_app.yaml").write_text(readme_block("yaml", "# my_app.yaml"))
    (where / "sample.txt").write_text(readme_block("text", "Step 200"))
    return where


def user_perfsweep(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The perfsweep command as a user runs it, with the venv's MPI (the doc's ``mpiexec``) on PATH."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(PERFSWEEP), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@session_sweep("own_app_doc")
def own_app_doc_sweep(work) -> Sweep:
    """docs/how-to/own-app.md's my_app.yaml, run as written (its exit code 0 is asserted here: every test
    that reads the sweep needs it); c.yaml beside it is the same config, so that :meth:`Sweep.copy` and
    Snakemake's --configfile find it."""
    work = write_user_dir(work)
    (work / "c.yaml").write_text((work / "my_app.yaml").read_text())
    run = user_perfsweep("run", "my_app.yaml", cwd=work)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return Sweep(work, yaml.safe_load((work / "my_app.yaml").read_text()), run.stdout, run.stderr)


def scorep_config(**app) -> dict:
    """The Score-P stand-in's sweep: n = 4-128, 2 repetitions; each run's profile in its own directory."""
    return {
        "app": {"command": f"{sys.executable} {STANDIN} --n {{n}} --template {TEMPLATE}",
                "profile": "scorep/{study}/{config_id}/rep{repetition}", **app},
        "parameters": {"n": 4},
        "studies": {"mm": {"vary": {"n": [4, 8, 16, 32, 64, 128]}}},
        "repetitions": 2,
    }


# an app whose time is 0.01 + 0.001 a b c d exactly
FOUR_APP = "import sys\nv = [float(a) for a in sys.argv[1:]]\nprint(f'time: {0.01 + 0.001 * v[0] * v[1] * v[2] * v[3]}')\n"
FOUR_STUDY = {"app": {"command": f"{sys.executable} four.py {{a}} {{b}} {{c}} {{d}}", "time_pattern": "time: ([0-9.e-]+)"},
              "parameters": {"a": 1, "b": 1, "c": 1, "d": 1},
              "vary": {"a": [1, 2, 4], "b": [1, 2, 4], "c": [1, 2, 4], "d": [1, 2, 4]},
              "design": {"kind": "sparse", "extra": 2}}

# exclusive false: two bundles at once on the 2 cores (what the tests read are the apps' own known
# numbers, which a neighbouring run cannot change)
BUNDLED = {**scorep_config(), "bundle": "repetitions", "exclusive": False,
           "studies": {**scorep_config()["studies"], "abcd": FOUR_STUDY}}
BUNDLED_TARGETS = ("results/models/mm/models.json", "results/tables/mm/regions.csv",
                   "results/tables/mm/aggregate.csv", "results/figures/abcd/model.png")


@session_sweep("own_apps_bundled")
def own_apps_bundled(work) -> Sweep:
    """Studies mm (the Score-P stand-in) and abcd (four parameters, sparse), bundled repetitions, to the
    models and tables of mm and the figures of abcd."""
    (work / "four.py").write_text(FOUR_APP)
    return make_sweep(work, json.loads(json.dumps(BUNDLED)), "--cores", "2", "--no-report", targets=BUNDLED_TARGETS)
