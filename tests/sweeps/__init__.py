"""The suite's shared sweeps: each real sweep (real Snakemake, real MPI ranks or a real app) runs once per
test session, and every test that needs it asserts on it; a test that changes a tree works on a copy
(:meth:`Sweep.copy`). Each module beside this one holds one kind of shared sweep as a session-scoped
fixture (conftest.py loads them all), most of them made with lane.py's ``session_sweep``, which the test
lane may make ahead beside the tests; tests/README.md maps each sweep to the tests that read it.

A sweep runs in a work directory of its own with ``results: results`` (relative), so that a copy of the
directory (config, results, Snakemake's .snakemake state) is the same sweep in another place."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

PERFSWEEP = Path(sys.executable).with_name("perfsweep")


@dataclass
class Sweep:
    """A sweep's work directory, its config (as written), and what its run printed and exited with."""

    work: Path
    config: dict
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None

    @property
    def results(self) -> Path:
        return self.work / "results"

    @property
    def config_file(self) -> Path:
        return self.work / "c.yaml"

    def copy(self, where: Path) -> "Sweep":
        """The same sweep in ``where`` (a new directory): a test that changes a tree changes its copy."""
        shutil.copytree(self.work, where, symlinks=True, dirs_exist_ok=False)
        return Sweep(Path(where), yaml.safe_load((Path(where) / "c.yaml").read_text()), self.stdout, self.stderr,
                     self.returncode)

    def run(self, *options: str, targets: tuple[str, ...] = (), check: bool = True,
            timeout: int = 1200) -> subprocess.CompletedProcess:
        """``perfsweep run c.yaml OPTIONS [-- TARGETS]`` in the work directory (the config as it is now)."""
        cmd = [str(PERFSWEEP), "run", "c.yaml", *options, *(["--", *targets] if targets else [])]
        proc = subprocess.run(cmd, cwd=self.work, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}) in {self.work}:\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        return proc

    def write_config(self, config: dict) -> None:
        self.config = config
        self.config_file.write_text(yaml.safe_dump(config, sort_keys=False))


def make_sweep(work: Path, config: dict, *options: str, targets: tuple[str, ...] = (), check: bool = True,
               timeout: int = 1200) -> Sweep:
    """Write ``config`` (its results made ``results``, relative) into ``work`` and run it once (``check``:
    its exit code must be 0; else read ``returncode``)."""
    work.mkdir(parents=True, exist_ok=True)
    sweep = Sweep(work, {})
    sweep.write_config({**config, "results": "results"})
    proc = sweep.run(*options, targets=targets, check=check, timeout=timeout)
    sweep.stdout, sweep.stderr, sweep.returncode = proc.stdout, proc.stderr, proc.returncode
    return sweep
