"""A separate virtual environment with Extra-P 4.2.5, for comparisons and format checks.

Extra-P pins numpy < 2, so it cannot live in perfsweep's own environment::

    from perfsweep.modeling.extrap_env import ensure_extrap, run_extrap
    python = ensure_extrap()                     # .extrap-venv/bin/python, created on first use
    run_extrap("import extrap; print(1)")
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from perfsweep.layout import REPO_ROOT

EXTRAP_VERSION = "4.2.5"
DEFAULT_VENV = Path(os.environ.get("PERFSWEEP_EXTRAP_VENV", REPO_ROOT / ".extrap-venv"))


def extrap_python(venv: Path = DEFAULT_VENV) -> Path | None:
    """The venv's python if Extra-P is importable there, else None."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    ok = subprocess.run([str(python), "-c", "import extrap.modelers.model_generator"], capture_output=True)
    return python if ok.returncode == 0 else None


def ensure_extrap(venv: Path = DEFAULT_VENV) -> Path:
    """Create the venv and install Extra-P into it unless it is already there (takes ~1-2 minutes)."""
    python = extrap_python(venv)
    if python:
        return python
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"extrap=={EXTRAP_VERSION}"],
                   check=True)
    python = extrap_python(venv)
    if python is None:
        raise RuntimeError(f"Extra-P {EXTRAP_VERSION} installed into {venv} but does not import")
    return python


def run_extrap(code: str, *args: str, venv: Path = DEFAULT_VENV, timeout: float = 3600) -> str:
    """Run Python code in Extra-P's venv; returns its stdout."""
    proc = subprocess.run([str(ensure_extrap(venv)), "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"Extra-P run failed: {proc.stderr[-2000:]}")
    return proc.stdout
