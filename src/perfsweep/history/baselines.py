"""The baselines of ``perfsweep compare NEW --history N``: the last N other sweeps in the store that measured
NEW's studies in the same setting (the same study digests) on a host of the same fingerprint, with the
labels asked for; as ``perfsweep compare`` sides (read from the models.json and aggregate the store
kept, by the same reader as a results tree, so the rows are those of the same sweeps' directories).

Never a baseline: the judged sweep itself (the same digest), a sweep that shares a run record with it,
or one that shares a run record with a baseline chosen before it (an incremental rerun of a recorded
sweep holds the first one's runs: they are not independent measurements), or one measured after it (the
judged sweep's time: where it is recorded, its time there, else its last run's end). "Last" is the order
of measurement (the last run's end; the recording's time where a tree had no records).
"""

from __future__ import annotations

import json
import tempfile
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from perfsweep import layout
from perfsweep.compare.load import Side, load_side
from perfsweep.history import schema as t
from perfsweep.history.store import HistoryError, Store
from perfsweep.history.sweep import SweepData

CHUNK = 500  # run digests per query


@dataclass
class Baseline:
    id: int
    labels: dict[str, str]
    app_version: str | None
    when: str
    results: str

    def name(self) -> str:
        """How the compare's output names it: ``history #12 (v1.2, branch=main)``."""
        said = [x for x in [self.app_version, *(f"{k}={v}" for k, v in sorted(self.labels.items()))] if x]
        return f"history #{self.id}" + (f" ({', '.join(said)})" if said else "")


def choose(store: Store, new: SweepData, count: int, labels: dict[str, str] | None = None) -> list[Baseline]:
    """The last ``count`` baselines of ``new`` (oldest first); HistoryError where fewer are found."""
    labels = labels or {}
    wanted = {(s.name, s.digest) for s in new.studies}
    with store.read() as conn:
        shares = _sharing(conn, new.run_digests)
        when = t.WHEN
        rows = conn.execute(select(t.sweeps.c.id, t.sweeps.c.digest, t.sweeps.c.labels, t.sweeps.c.app_version,
                                   when.label("when"), t.sweeps.c.results)
                            .where(t.sweeps.c.fingerprint == new.fingerprint)
                            .order_by(when.desc(), t.sweeps.c.id.desc())).all()
        studies = defaultdict(set)
        for sweep_id, name, digest in conn.execute(select(t.studies.c.sweep_id, t.studies.c.name, t.studies.c.digest)
                                                   .where(t.studies.c.digest.in_({d for _, d in wanted}))):
            studies[sweep_id].add((name, digest))
        recorded = conn.execute(select(when).where(t.sweeps.c.digest == new.digest)).scalar()
        before = recorded or new.measured_to  # baselines are measured before the judged sweep
        chosen: list[Baseline] = []
        taken: set[str] = set()
        for sweep_id, digest, labels_json, app_version, when_, results in rows:
            own = json.loads(labels_json)
            if (digest == new.digest or sweep_id in shares or not wanted <= studies[sweep_id]
                    or before is not None and when_ >= before
                    or not t.has_labels(own, labels)):
                continue
            runs = _runs(conn, sweep_id)
            if runs & taken:
                continue
            taken |= runs
            chosen.append(Baseline(int(sweep_id), own, app_version, when_, results))
            if len(chosen) == count:
                break
    if len(chosen) < count:
        asked = f" with labels {', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}" if labels else ""
        raise HistoryError(f"{store.name}: {len(chosen)} of the {count} baselines asked for are recorded for {new.results}"
                           f" (other sweeps of its studies {', '.join(sorted(n for n, _ in wanted))} in the same setting, "
                           f"on a host of the same fingerprint{asked}, sharing no run with it or each other): record more "
                           "sweeps (perfsweep history add RESULTS) or ask for fewer (--history N)")
    return chosen[::-1]


def _sharing(conn, digests: list[str]) -> set[int]:
    """The sweeps that hold any of these run digests."""
    out: set[int] = set()
    for start in range(0, len(digests), CHUNK):
        part = digests[start:start + CHUNK]
        out |= set(conn.execute(select(t.sweep_runs.c.sweep_id).where(t.sweep_runs.c.digest.in_(part))
                                .distinct()).scalars())
    return out


def _runs(conn, sweep_id: int) -> set[str]:
    return set(conn.execute(select(t.sweep_runs.c.digest).where(t.sweep_runs.c.sweep_id == sweep_id)).scalars())


def load(store: Store, baseline: Baseline, names: list[str]) -> tuple[Side, dict[str, Any]]:
    """The baseline as a compare side (its studies ``names``) and its setting (compare.setting's form)."""
    with store.read() as conn:
        rows = conn.execute(select(t.studies.c.name, t.studies.c.models_json, t.studies.c.aggregate_csv,
                                   t.studies.c.setting)
                            .where(t.studies.c.sweep_id == baseline.id, t.studies.c.name.in_(names))).all()
    setting: dict[str, Any] = {"fields": defaultdict(set), "params": defaultdict(lambda: defaultdict(set)),
                               "commands": {}}
    with tempfile.TemporaryDirectory(prefix="perfsweep-history-") as tmp:
        root = Path(tmp)
        for name, models, aggregate, own_json in rows:
            target = layout.models_dir(root) / name / layout.file_name("models", "models_json")
            target.parent.mkdir(parents=True)
            target.write_bytes(zlib.decompress(models))
            if aggregate is not None:
                table = Path(layout.output(root, "aggregate", "aggregate", name))
                table.parent.mkdir(parents=True, exist_ok=True)
                table.write_bytes(zlib.decompress(aggregate))
            own = json.loads(own_json)
            for field, values in own["fields"].items():
                setting["fields"][field].update(values)
            for param, values in own["params"].items():
                setting["params"][name][param].update(values)
            for config, command in own["commands"].items():
                setting["commands"][name, config] = command
        side = load_side(root)
    side.path = baseline.name()
    side.files = {study: f"{baseline.name()}: {study}" for study in side.files}
    for entries in side.studies.values():
        for entry in entries.values():
            entry.source = f"{baseline.name()}: {Path(entry.source).parent.name}"
    return side, setting
