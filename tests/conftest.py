import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def snakemake(*args, cwd=REPO, check=True, timeout=900):
    """Run the real Snakemake on the project's Snakefile; returns the CompletedProcess."""
    cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), *map(str, args)]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture
def workdir(tmp_path):
    """A scratch directory to run Snakemake in (its .snakemake/ state stays there)."""
    return tmp_path
