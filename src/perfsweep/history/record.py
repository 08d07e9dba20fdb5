"""Recording a sweep (:func:`record`) and the verdict of a compare (:func:`record_verdict`), each in one
transaction: a process killed inside it leaves the store as before; a sweep already recorded (the same
digest: the same run records) adds nothing."""

from __future__ import annotations

import json
import zlib
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from perfsweep.history import schema as t
from perfsweep.history.store import Store, dumps
from perfsweep.history.sweep import SweepData, read_tree


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def record(store: Store, sweep: SweepData, labels: dict[str, str] | None = None,
           app_version: str | None = None) -> tuple[int, bool]:
    """Record ``sweep``: (its id, whether it is new). Idempotent: a sweep of the same digest is not
    recorded again (its labels and app version stay those of its first recording)."""
    try:
        with store.write() as conn:
            found = conn.execute(select(t.sweeps.c.id).where(t.sweeps.c.digest == sweep.digest)).scalar()
            if found is not None:
                return int(found), False
            sweep_id = conn.execute(insert(t.sweeps).values(
                digest=sweep.digest, results=sweep.results, recorded_at=now(), measured_from=sweep.measured_from,
                measured_to=sweep.measured_to, app_version=app_version, perfsweep_version=sweep.perfsweep_version,
                labels=dumps(labels or {}), fingerprint=sweep.fingerprint, host=dumps(sweep.host),
                repetitions=sweep.repetitions, runs=len(sweep.run_digests))).inserted_primary_key[0]
            if sweep.run_digests:
                conn.execute(insert(t.sweep_runs), [{"sweep_id": sweep_id, "digest": d} for d in sweep.run_digests])
            for study in sweep.studies:
                study_id = conn.execute(insert(t.studies).values(
                    sweep_id=sweep_id, name=study.name, digest=study.digest, params=dumps(study.params),
                    setting=dumps(study.setting), target=dumps(study.target),
                    models_json=zlib.compress(study.models_json, 6),
                    aggregate_csv=None if study.aggregate_csv is None else zlib.compress(study.aggregate_csv, 6),
                )).inserted_primary_key[0]
                if study.entries:
                    conn.execute(insert(t.entries), [{"study_id": study_id, **e} for e in study.entries])
            return int(sweep_id), True
    except IntegrityError:  # another process recorded the same sweep meanwhile
        with store.read() as conn:
            return int(conn.execute(select(t.sweeps.c.id).where(t.sweeps.c.digest == sweep.digest)).scalar_one()), False


def record_tree(store: Store, results: str, labels: dict[str, str] | None = None,
                app_version: str | None = None) -> tuple[int, bool, SweepData]:
    """Record the results tree ``results`` (perfsweep history add, perfsweep run): its id, whether it is
    new, and the sweep as read."""
    sweep = read_tree(results)
    return (*record(store, sweep, labels, app_version), sweep)


def record_verdict(store: Store, sweep_id: int | None, judged: str, baselines: list[int], exit_code: int,
                   rows: list[dict[str, Any]]) -> int:
    """A compare made against the store: the judged sweep (its id where it is recorded), its baselines,
    the exit code and the rows."""
    with store.write() as conn:
        return int(conn.execute(insert(t.verdicts).values(
            sweep_id=sweep_id, judged=judged, baselines=dumps(baselines), made_at=now(), exit_code=exit_code,
            rows=zlib.compress(json.dumps(rows, default=str).encode(), 6))).inserted_primary_key[0])
