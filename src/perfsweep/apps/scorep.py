"""External apps instrumented with Score-P: their CUBE profile's call paths become regions of the run.

Config (an external app)::

    app:
      command: "{launcher} ./my_app --size {n}"
      profile: "scorep/{study}/{config_id}/rep{repetition}"   # one Score-P experiment directory per run

Before each run the runner passes the directory to the app as ``SCOREP_EXPERIMENT_DIRECTORY`` (Score-P
then writes ``profile.cubex`` there); after the run it reads the profile through pycubexr and stores,
per process rank, every call path (``main->solve->MPI_Allreduce``) with every metric as the rank's
``regions`` of the run record: ``{"time": s, "visits": k, "PAPI_FP_OPS": ..., ...}`` (exclusive values;
over a rank's threads the maximum for time metrics, the sum for counts). The tables and models then
treat the call paths like the built-in apps' regions (time: maximum over ranks), and model every other
metric of a call path too (perfsweep.tables.aggregate: counts summed over ranks, ``*time*`` metrics
their maximum, ``min_*`` their minimum). ``profile`` may also
name the ``.cubex`` file itself; placeholders are the app's parameters, ``{study}``, ``{config_id}`` and
``{repetition}``. A profile missing after the run, older than the run, or unreadable makes the run
``failed`` with the reason. Nothing is deleted.
"""

from __future__ import annotations

import contextlib
import os
import string
from pathlib import Path
from typing import Any, Iterator

RUN_FIELDS = ("study", "config_id", "repetition")
ENV = "SCOREP_EXPERIMENT_DIRECTORY"


def template_error(template: str, params: list[str]) -> str | None:
    """Why a ``profile`` template is not usable (unknown placeholder, empty), or None."""
    if not template.strip():
        return "empty path"
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return f"{template!r}: {exc}"
    known = [*params, *RUN_FIELDS]
    for f in fields:
        if f not in known:
            return f"{template!r}: unknown placeholder {{{f}}} (known: {', '.join('{' + k + '}' for k in known)})"
    return None


def profile_path(template: str | None, fmt: dict[str, str], study: str, config_id: str,
                 repetition: int) -> str | None:
    """The run's profile path (``app.profile`` with its placeholders filled), or None."""
    if not template:
        return None
    return template.format(**fmt, study=study, config_id=config_id, repetition=repetition)


def _directory(profile: str) -> str:
    return str(Path(profile).parent) if profile.endswith(".cubex") else profile


@contextlib.contextmanager
def environment(profile: str | None) -> Iterator[None]:
    """Tell Score-P where to write the run's experiment (for the app the runner starts now)."""
    if not profile:
        yield
        return
    old = os.environ.get(ENV)
    os.environ[ENV] = os.path.abspath(_directory(profile))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def cubex_file(profile: str) -> Path:
    """The ``.cubex`` file a profile path names (a file, or a directory holding one profile)."""
    path = Path(profile)
    if path.is_dir():
        found = sorted(path.glob("*.cubex"))
        if not found:
            raise FileNotFoundError(f"no *.cubex profile in {profile}")
        path = path / "profile.cubex" if (path / "profile.cubex").exists() else found[0]
    if not path.is_file():
        raise FileNotFoundError(f"Score-P profile {profile} not found after the run")
    return path


def add_profile(record: dict[str, Any], profile: str | None, started: float) -> None:
    """Read the run's profile into ``record``: per-rank regions (merged into the ranks of a timings
    report if there is one) and ``record["profile"]``. Raises ValueError/OSError for a bad profile."""
    if not profile:
        return
    from perfsweep.cube import profile_regions  # heavy (pandas, numpy): the runner, which
    # imports this module for every run, needs it only for a run with a Score-P profile

    path = cubex_file(profile)
    if path.stat().st_mtime < started - 1.0:
        raise ValueError(f"Score-P profile {path} is older than the run (a stale profile of an earlier run)")
    ranks = profile_regions(path)
    record["profile"] = str(path)
    mine = {r["rank"]: r for r in record.get("ranks") or []}
    for entry in ranks:
        if entry["rank"] in mine:
            mine[entry["rank"]].setdefault("regions", {}).update(entry["regions"])
        else:
            mine[entry["rank"]] = entry
    record["ranks"] = [mine[r] for r in sorted(mine)]
