"""A non-editable install (pip install ., as a wheel or a conda package would be) validates a config
and plans a sweep from another directory: the schema is package data, the workflow is found by
--workflow (or $PERFSWEEP_WORKFLOW)."""

import re
import shutil
import site
import subprocess
import sys

import pytest

from conftest import REPO
from perfsweep.config import load_config_file

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with perfsweep installed from a copy of this checkout (the checkout stays as it is).
    Its dependencies are this venv's (a .pth names its site-packages), so nothing is downloaded but the
    build backend. The venv is made without pip and this venv's pip installs into it (pip --python):
    the same install, without the seconds of putting a pip into the new venv first."""
    tmp = tmp_path_factory.mktemp("install")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    src = tmp / "src"
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    purelib = subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (tmp / "venv" / purelib.split(str(venv) + "/", 1)[1] / "deps.pth").write_text(site.getsitepackages()[0] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--quiet", "--no-deps",
                    "--ignore-installed", src], check=True, cwd=tmp, timeout=600)
    shutil.rmtree(src)  # the installed package must not need its source
    return venv


def test_installed_package_is_not_the_checkout(installed):
    where = subprocess.run([installed / "bin" / "python", "-c", "import perfsweep; print(perfsweep.__file__)"],
                           check=True, capture_output=True, text=True, cwd=installed.parent).stdout
    assert where.startswith(str(installed)), where


def test_installed_validates_and_plans_from_another_directory(installed, tmp_path):
    cli = installed / "bin" / "perfsweep"
    config = REPO / "config" / "config.yaml"
    sweep = load_config_file(config)  # the checkout's own reading, for the counts the installed one must print
    runs = sweep.n_runs()  # the first round's runs, with the validation points' fixed count
    proc = subprocess.run([cli, "validate", config], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and f"valid; {len(sweep.studies)} studies, {runs} runs" in proc.stdout, \
        proc.stdout + proc.stderr
    proc = subprocess.run([cli, "run", config, "--", "-n"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("perfsweep: no workflow beside this installed perfsweep"), \
        proc.stdout + proc.stderr
    proc = subprocess.run([cli, "run", config, "--workflow", REPO, "--", "-n"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "This was a dry-run" in out and re.search(rf"^run\s+{runs}$", out, re.M), out[-3000:]
    assert not (tmp_path / "results").exists()  # planned, nothing run
