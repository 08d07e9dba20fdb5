"""Run records: the raw, never-rewritten source of truth of a sweep.

One JSON file per (study, configuration, repetition). The record schema (``perfsweep.run/1``)::

    {
      "schema": "perfsweep.run/1",
      "run_id": "nm/n=200_m=1/rep0",          # study/config_id/rep<k>
      "study": "nm", "config_id": "n=200_m=1", "repetition": 0,
      "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
      "status": "ok" | "failed" | "timeout",
      "error": null | "one line saying what went wrong",
      "returncode": 0,
      "attempt": 1,                            # Snakemake attempt (retries)
      "time": 1.23,       # the measured metric: the app's own total (max over ranks), else wall time
      "wall_time": 1.45,  # launch to exit, measured by perfsweep around the launcher
      "started_at": "2026-11-22T15:40:00+00:00", "finished_at": "...",
      "launch": {"command": ["mpiexec", "-n", "1", ...], "launcher": "mpiexec", "cwd": "..."},
      "host": "node1", "hosts": ["node1"],
      "mpi": {"library": "MPICH", "version": "MPICH Version: 5.0.2", "standard": "4.1"},
      "slurm": null | {"job_id": "123", "nodelist": "n[1-2]", "tasks_per_node": "1(x2)", ...},
      "nodes": ["n1", "n2"], "ranks_per_node": {"n1": 1, "n2": 1},   # where the ranks ran
      "recorded_by": "...",   # only on the record of a run whose SLURM job ended (perfsweep.cluster.ended)
      "ranks": [ {"rank": 0, "init": s, "compute": s, "io": s, "comm": s, "other": s, "total": s,
                  "comm_ops": {"Allreduce": s}, "regions": {"step/forces": {"time": s, "visits": k}},
                  "threads": [{"thread": 0, "useful": s}, ...] (optional) }, ...],
      "metrics": {"name": value, ...},   # extra scalar metrics (regex matches of external apps)
      "stdout_tail": "...", "stderr_tail": "...",
      "perfsweep_version": "0.1.0"
    }
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

RUN_SCHEMA = "perfsweep.run/1"


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON so that readers see either nothing or the whole file (temp file + fsync + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)
