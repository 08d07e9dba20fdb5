"""A results tree as the history store records it (:class:`SweepData`).

- **Identity**: a sweep is the set of its run records' digests (SHA-256 of each ``runs/<study>/<config>/rep<k>.json``
  as written): recording the same results again, or after an incremental rerun that measured nothing, is
  the same sweep; a rerun that measured more is another sweep that shares runs with the first (the two are
  then never independent baselines of each other). A tree without run records (a models.json and
  aggregate kept from elsewhere, the synthetic sweeps of the tests) is the digest of its models and
  aggregates.
- **Host fingerprint**: from the records, the CPU model, cores, memory and kernel (``machine``, recorded by
  runs since issue 56) and the SLURM partition; a record without ``machine`` (older perfsweep) gives its
  host name and cores instead. A tree without records has the empty fingerprint.
- **Per study**: the setting digest that baselines are matched by (the study, its varied parameters, the
  fixed parameters' values, the launcher and the MPI library; not the app's command or version, which
  change from version to version, nor the host, which is the fingerprint), the setting that ``perfsweep
  compare`` lists differences of, the models.json and the aggregate table as bytes, and per region and
  metric the summary that the trends read (:func:`summaries`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perfsweep import layout
from perfsweep.compare.load import Side, load_side
from perfsweep.compare.setting import setting
from perfsweep.compare.statistics import predict_at
from perfsweep.history.store import HistoryError, dumps
from perfsweep.modeling import lead_orders as lead

LEVEL = 0.95  # of the entries' intervals at the target


@dataclass
class StudyData:
    name: str
    digest: str
    params: list[str]
    setting: dict[str, Any]
    target: dict[str, float]
    models_json: bytes
    aggregate_csv: bytes | None
    entries: list[dict[str, Any]]


@dataclass
class SweepData:
    results: str
    digest: str
    run_digests: list[str]
    measured_from: str | None
    measured_to: str | None
    perfsweep_version: str | None
    host: dict[str, Any]
    fingerprint: str
    repetitions: bool
    studies: list[StudyData] = field(default_factory=list)
    whole: dict[str, Any] = field(default_factory=dict, repr=False)  # compare.setting's of the tree (read once)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_tree(root: str | Path, side: Side | None = None, entries: bool = True) -> SweepData:
    """The sweep of a results tree (its models must exist: ``perfsweep run`` until its models stage);
    ``side``: the tree as compare loaded it already; ``entries``: False for its identity alone (no target,
    no entries: what ``compare --history`` matches baselines by)."""
    root = Path(root)
    if not (root.is_dir() and layout.models_dir(root).is_dir()):
        raise HistoryError(f"{root}: not a results directory with models (no {layout.pattern('models', 'models_json')})")
    found = layout.study_models(root)
    if not found:
        raise HistoryError(f"{root}: a results directory without models: run the sweep (perfsweep run) until its "
                           "models stage has written them")
    side = side or load_side(root)
    digests, records = _records(root)
    files = {study: (models.read_bytes(), aggregate.read_bytes() if aggregate.is_file() else None)
             for study, (models, aggregate) in found.items()}
    if digests:
        digest = sha256("\n".join(sorted(digests)).encode())
    else:  # no run records: the models and aggregates are the sweep
        digest = sha256(b"".join(sha256(m).encode() + sha256(a or b"").encode() for _, (m, a) in sorted(files.items())))
    host = host_of(records)
    started = sorted(r["started_at"] for r in records if isinstance(r.get("started_at"), str))
    ended = sorted(r["finished_at"] for r in records if isinstance(r.get("finished_at"), str))
    versions = sorted({str(r["perfsweep_version"]) for r in records if r.get("perfsweep_version")})
    whole = setting(root)
    sweep = SweepData(str(root.resolve()), digest, sorted(digests), started[0] if started else None,
                      ended[-1] if ended else None, ", ".join(versions) or None, host, sha256(dumps(host).encode()),
                      repetitions=all(a is not None and b"values" in a.split(b"\n", 1)[0] for _, a in files.values()),
                      whole=whole)
    for study, (models_bytes, aggregate_bytes) in files.items():
        if study not in side.studies:
            continue
        params = side.params[study]
        own = _study_setting(whole, study)
        sweep.studies.append(_study(side, study, params, own, models_bytes, aggregate_bytes, entries))
    return sweep


def _study(side: Side, study: str, params: list[str], own: dict, models_bytes: bytes,
           aggregate_bytes: bytes | None, with_entries: bool = True) -> StudyData:
    target, entries = summaries(side, study) if with_entries else ({}, [])
    return StudyData(study, study_digest(study, params, own), params, own, target, models_bytes, aggregate_bytes,
                     entries)


def _records(root: Path) -> tuple[list[str], list[dict]]:
    """Every run record's digest and content (a record that is no JSON object counts by its digest)."""
    digests, records = [], []
    runs = layout.runs_dir(root)
    if not runs.is_dir():
        return digests, records
    for path in sorted(runs.glob(f"*/*/{layout.record_glob()}")):
        data = path.read_bytes()
        digests.append(sha256(data))
        try:
            record = json.loads(data)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return digests, records


def host_of(records: list[dict]) -> dict[str, Any]:
    """What the fingerprint is of: the machines the runs ran on (CPU model, cores, memory, kernel) and the
    SLURM partition; without ``machine`` in the records, their host names and cores."""
    machines, partitions, hosts, cores = set(), set(), set(), set()
    for r in records:
        machine = r.get("machine")
        if isinstance(machine, dict):
            machines.add(dumps({k: machine.get(k) for k in ("cpu_model", "cores", "memory", "kernel")}))
        elif r.get("host"):
            hosts.add(str(r["host"]))
        if r.get("cores") is not None:
            cores.add(int(r["cores"]))
        slurm = r.get("slurm")
        if isinstance(slurm, dict) and slurm.get("partition"):
            partitions.add(str(slurm["partition"]))
    out: dict[str, Any] = {}
    if machines:
        out["machines"] = [json.loads(m) for m in sorted(machines)]
    if hosts:
        out["hosts"], out["cores"] = sorted(hosts), sorted(cores)
    if partitions:
        out["partitions"] = sorted(partitions)
    return out


def _study_setting(whole: dict, study: str) -> dict[str, Any]:
    """compare.setting's result for one study, as JSON (sets as sorted lists)."""
    return {"fields": {k: sorted(v) for k, v in sorted(whole["fields"].items())},
            "params": {k: sorted(v) for k, v in sorted(whole["params"].get(study, {}).items())},
            "commands": {config: command for (s, config), command in sorted(whole["commands"].items()) if s == study}}


def study_digest(study: str, params: list[str], own: dict[str, Any]) -> str:
    """What makes two sweeps' study the same study: its name, varied parameters, fixed parameters' values,
    launcher and MPI (module docstring)."""
    fixed = {k: v[0] for k, v in own["params"].items() if k not in params and len(v) == 1}
    fields = own["fields"]
    return sha256(dumps({"study": study, "varied": list(params), "fixed": fixed,
                         "launcher": fields.get("launcher", []), "mpi": fields.get("mpi", [])}).encode())


def summaries(side: Side, study: str) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The study's target (its largest measured configuration: the largest product of its values, as
    ``perfsweep compare``'s default) and per region and metric: form, lead orders, lead share, the
    prediction there with its LEVEL interval, and the median measured there."""
    entries = side.studies[study]
    names = side.params[study]
    points = [e.points for e in entries.values() if e.points.size]
    if points:
        grid = np.unique(np.vstack(points), axis=0)
        x = grid[np.argmax(np.sum(np.log(np.maximum(grid, 1e-300)), axis=1))]
    else:  # models without measured points: the largest of the first model's own points
        x = np.asarray(next(iter(entries.values())).model.points, float).reshape(-1, len(names)).max(axis=0)
    out = []
    for (region, metric), e in entries.items():
        model = e.model
        value = predict_at(model, x)
        low, high = (float(v[0]) for v in model.interval(x[None, :], level=LEVEL))
        at = np.flatnonzero(np.all(np.isclose(e.points, x), axis=1)) if e.points.size else []
        kind = e.kind_of(metric)
        out.append({"region": region, "metric": metric, "form": model.lead(), "orders": lead.format_orders(model),
                    "lead_share": _finite(model.lead_share), "prediction": _finite(value), "low": _finite(low),
                    "high": _finite(high), "median": _finite(float(e.medians[at[0]])) if len(at) else None,
                    "unit": kind.unit or None, "direction": "higher" if kind.higher_is_better else "lower"})
    return dict(zip(names, map(float, x))), out


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None

