"""A run's identity is what it measures (app, parameters, launch template, patterns, options), not where
the Python and mpiexec that launch it live: the real perfsweep and Snakemake on a finished sweep whose
checkout was moved, with its results and Snakemake's state, and whose venv was made again elsewhere."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from sweeps.lane import lane_test

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
SITE = sysconfig.get_paths()["purelib"]  # this venv's packages

# 2 x 2 runs of the built-in ljmd app, a few steps each: its Python ({python}) and the default
# launcher's {mpiexec} are the tools whose place must not matter
CONFIG = {"app": {"name": "ljmd", "args": {"steps": 2}}, "launcher": "{mpiexec} -bind-to core -n {p}",
          "parameters": {"n": 100, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
          "studies": {"s": {"vary": {"n": [100, 120], "p": [1, 2]}}},
          "repetitions": 1, "results": "results", "timeout": 120}


# the run records only (Snakemake's target runs): what a run's identity decides is whether a record is
# measured again; the tables, models and figures of the records are no part of it
RUN = ("run", "tiny.yaml", "--cores", "2", "--no-report", "--", "runs")


def checkout(dest: Path) -> None:
    """A copy of this checkout's files at ``dest`` (as git lists them)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)


def make_venv(dest: Path) -> Path:
    """A new venv at ``dest``/.venv, as `make setup` would make it but without the minutes of pip: a new
    Python (python -m venv) whose packages are this venv's and whose perfsweep is ``dest``/src (a .pth
    file), its own perfsweep command, and the MPI that pip puts into a venv (bin/mpiexec and its proxy,
    lib/: linked to this venv's). Returns its bin/."""
    venv = dest / ".venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "perfsweep-test.pth").write_text(f"{dest / 'src'}\n{SITE}\n")
    script = f"#!{python}\nimport sys\nfrom perfsweep.cli import main\nsys.exit(main())\n"  # as pip writes it
    (venv / "bin" / "perfsweep").write_text(script)
    (venv / "bin" / "perfsweep").chmod(0o755)
    for name in ("mpiexec", "hydra_pmi_proxy"):
        if (BIN / name).exists():
            (venv / "bin" / name).symlink_to(BIN / name)
    for entry in (BIN.parent / "lib").iterdir() if (BIN.parent / "lib").is_dir() else ():
        if not entry.name.startswith("python") and not (venv / "lib" / entry.name).exists():
            (venv / "lib" / entry.name).symlink_to(entry)
    return venv / "bin"


def perfsweep(bin_dir: Path, cwd: Path, *args: str) -> str:
    """Run the checkout's perfsweep command; its output (stdout and stderr)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PERFSWEEP_WORKFLOW", "VIRTUAL_ENV")}
    proc = subprocess.run([str(bin_dir / "perfsweep"), *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    return out


def run_jobs(out: str) -> int:
    return len(re.findall(r"^\s*(?:local)?rule run:", out, re.MULTILINE))


def saved(results: Path, what: str) -> dict[str, bytes]:
    return {str(p.relative_to(results / what)): p.read_bytes() for p in sorted((results / what).rglob("*.json"))}


@lane_test
def test_a_moved_checkout_with_a_new_venv_measures_nothing_again_and_a_changed_launcher_everything(tmp_path):
    old, new = tmp_path / "old", tmp_path / "moved"
    checkout(old)
    old_bin = make_venv(old)
    (old / "tiny.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    assert run_jobs(perfsweep(old_bin, old, *RUN)) == 4
    records = saved(old / "results", "runs")
    assert len(records) == 4 and {json.loads(r)["status"] for r in records.values()} == {"ok"}
    launch = json.loads(records["s/n=120_p=2/rep0.json"])["launch"]
    # the record keeps where the tools were (provenance), and the command as the spec gives it (identity)
    assert str(old_bin / "python") in launch["command"]
    assert launch["spec_command"][:6] == ["{mpiexec}", "-bind-to", "core", "-n", "2", "{python}"]
    if (BIN / "mpiexec").exists():
        assert launch["command"][0] == str(old_bin / "mpiexec")

    # moved: the checkout with its results and .snakemake/ (mv), a venv made again at the new place
    shutil.copytree(old, new, symlinks=True, ignore=shutil.ignore_patterns(".venv"))
    shutil.rmtree(old)
    new_bin = make_venv(new)
    plan = perfsweep(new_bin, new, "plan", "tiny.yaml")
    assert "4 runs (4 measured)" in plan and "(0 still to run)" in plan and "to run again" not in plan, plan
    out = perfsweep(new_bin, new, *RUN)
    assert run_jobs(out) == 0, out[-3000:]
    assert saved(new / "results", "runs") == records  # nothing measured again, nothing set aside
    assert len(saved(new / "results", "archive")) == 4 and not (new / "results" / "superseded").exists()

    # a changed launcher in the same checkout: every run is measured again, with the new venv's tools
    (new / "tiny.yaml").write_text(yaml.safe_dump({**CONFIG, "launcher": "{mpiexec} -n {p}"}, sort_keys=False))
    plan = perfsweep(new_bin, new, "plan", "tiny.yaml")
    assert "4 runs (0 measured)" in plan and "4 records of another launch" in plan, plan
    assert run_jobs(perfsweep(new_bin, new, *RUN)) == 4
    again = saved(new / "results", "runs")
    assert len(saved(new / "results", "archive")) == 8 and len(saved(new / "results", "superseded")) == 4
    launch = json.loads(again["s/n=120_p=2/rep0.json"])["launch"]
    assert launch["spec_command"][:3] == ["{mpiexec}", "-n", "2"] and str(new_bin / "python") in launch["command"]
