"""How the runs of A and B were set up, from what their results trees store (the run records,
``runs/<study>/<config>/rep<k>.json``): :func:`differences` lists what differs (fixed parameters, the app's
command, the launcher, MPI, host, cores, node names, perfsweep's version), for the top of the output.

A side that is no results directory (a models.json, an Extra-P input) has no records: nothing is listed.
Records of any age are read: a field a record has not got (older records have no ``cores``, no ``mpi``,
no ``variant``) is not compared; damaged records are skipped (``perfsweep check-records`` names them).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from perfsweep import layout

MAX_LISTED = 12  # differences listed (then "... and N more")
RUN_DIR = re.compile(r"perfsweep-run-[A-Za-z0-9_]+")  # a run's own temporary directory (its --report file)


def setting(root: str | Path, variant: str | None = None) -> dict[str, Any]:
    """What a results tree's run records say about how its runs were set up: per field its set of values
    (``host``, ``cores``, ``nodes``, ``launcher``, ``mpi``, ``perfsweep_version``), per study its
    parameters' values (``params``), and per (study, configuration) the app's command (``commands``);
    ``variant``: the records of that variant's studies only, under the config's study names."""
    out: dict[str, Any] = {"fields": defaultdict(set), "params": defaultdict(lambda: defaultdict(set)),
                           "commands": {}}
    root = Path(root)
    if not (root.is_dir() and layout.runs_dir(root).is_dir()):
        return out
    for study_dir in sorted(p for p in layout.runs_dir(root).iterdir() if p.is_dir()):
        study, of = layout.split_variant(study_dir.name)
        if variant is not None and of != variant:
            continue
        study = study if variant is not None else study_dir.name
        for path, config_id, _ in layout.study_record_paths(root, study_dir.name):
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(rec, dict):
                continue
            launch = rec.get("launch") if isinstance(rec.get("launch"), dict) else {}
            fields = out["fields"]
            for name, value in (("host", rec.get("host")), ("cores", rec.get("cores")),
                                ("launcher", launch.get("launcher")), ("mpi", _mpi(rec.get("mpi"))),
                                ("perfsweep_version", rec.get("perfsweep_version"))):
                if value is not None:
                    fields[name].add(str(value))
            for node in rec.get("nodes") or []:
                fields["nodes"].add(str(node))
            for name, value in (rec.get("parameters") or {}).items():
                out["params"][study][name].add(json.dumps(value))
            command = launch.get("spec_command")
            if isinstance(command, list) and (study, config_id) not in out["commands"]:
                out["commands"][study, config_id] = [RUN_DIR.sub("perfsweep-run-*", str(c)) for c in command]
    return out


def _mpi(mpi: Any) -> str | None:
    if isinstance(mpi, dict):
        return " ".join(str(mpi[k]) for k in ("library", "version") if mpi.get(k)) or None
    return str(mpi) if mpi else None


def differences(a: str | Path, b: str | Path, variants: tuple[str | None, str | None] = (None, None)) -> list[str]:
    """What differs between the runs of the results trees ``a`` and ``b``, one line each (empty: nothing
    found to differ, or no records to compare); ``variants``: of a paired measurement, each side's."""
    return differences_of(setting(a, variants[0]), setting(b, variants[1]))


def differences_of(sa: dict[str, Any], sb: dict[str, Any]) -> list[str]:
    """:func:`differences` of two settings as :func:`setting` returns them (a history store keeps them)."""
    out: list[str] = []
    for name in ("launcher", "mpi", "host", "cores", "nodes", "perfsweep_version"):
        va, vb = sa["fields"].get(name), sb["fields"].get(name)
        if va and vb and va != vb:
            out.append(f"{name}: A {_values(va)}, B {_values(vb)}")
    for study in sorted(set(sa["params"]) & set(sb["params"])):
        pa, pb = sa["params"][study], sb["params"][study]
        for name in sorted(set(pa) | set(pb)):
            va, vb = pa.get(name, set()), pb.get(name, set())
            if len(va) == 1 and len(vb) == 1 and va != vb:  # a fixed parameter (the varied ones are compared as models)
                out.append(f"study {study}: fixed parameter {name}: A {_values(va)}, B {_values(vb)}")
            elif bool(va) != bool(vb):
                out.append(f"study {study}: parameter {name} only in {'A' if va else 'B'}")
    for study, config_id in sorted(set(sa["commands"]) & set(sb["commands"])):
        ca, cb = sa["commands"][study, config_id], sb["commands"][study, config_id]
        if ca != cb:
            out.append(f"study {study}: app command of {config_id}: {_command_change(ca, cb)}")
            break  # one configuration shows it; the others differ alike
    if len(out) > MAX_LISTED:
        out = out[:MAX_LISTED] + [f"... and {len(out) - MAX_LISTED} more"]
    return out


def not_paired(changed: list[str]) -> list[str]:
    """Of a paired measurement's ``differences``, those that say its variants were not measured together:
    all but the app's command (the variants' change) and the nodes or hosts their runs ran on (on a
    cluster every job runs where SLURM finds room, so a configuration's two variants may land on two
    nodes: a paired sweep on the local 2-node cluster was refused so)."""
    return [d for d in changed if ": app command of " not in d and not d.startswith(("nodes: ", "host: "))]


def _command_change(ca: list[str], cb: list[str]) -> str:
    """``--steps 150 (A) -> 180 (B)``, word by word where the commands are as long, else the words of one only."""
    if len(ca) == len(cb):
        return "; ".join(f"{ca[k - 1] + ' ' if k else ''}{x} (A) -> {y} (B)" for k, (x, y) in enumerate(zip(ca, cb)) if x != y)
    only_a, only_b = [c for c in ca if c not in cb], [c for c in cb if c not in ca]
    return f"A has {' '.join(only_a) or '-'}, B has {' '.join(only_b) or '-'}"


def _values(values: set[str]) -> str:
    listed = sorted(values)
    return ", ".join(listed[:4]) + (f" (+{len(listed) - 4})" if len(listed) > 4 else "")
