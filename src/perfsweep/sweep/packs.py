"""Packs: many runs in one job (config ``bundle: packs``), so that a sweep of thousands of short runs is a
few SLURM allocations and a small DAG.

A pack holds runs of one repetition round that ask for the same resources (process count and threads per
rank, so no node of its allocation idles), in the round's seeded order (perfsweep.sweep.order), the
variants of a configuration together and back to back. Its size is the config's ``pack:``: at most
``runs`` runs, and no more than fill ``minutes`` at ``seconds_per_run`` each (default: the timeout). A
configuration's k repetitions are in k rounds, so in k packs: one allocation's node effects never enter
all of them.

Packs depend only on the config and its seed: the same config plans the same packs. The main Snakemake
process keeps the assignment in ``<results>/packs/plan.json`` (:func:`write_plan`), so that runs added
later (more repetitions, an adaptive round's points) form new packs and leave the others as they were;
runs no longer in the sweep leave their pack. Each pack's runs (their specs and records) are written to
``<results>/packs/<pack>.json``, which the pack job's runner reads (``python -m perfsweep.runner
--pack FILE``: perfsweep.sweep.pack_run).

    packs = plan(order, classes, size=100)      # {pack id: Pack}
    packs["r0-p2t1-000"].runs                   # (("nm", "n=200_m=1", 0), ...)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from perfsweep import layout
from perfsweep.cluster.launch import ClusterSettings
from perfsweep.layout import split_variant
from perfsweep.sweep.order import Run, _write_changed, run_order
from perfsweep.sweep.plan import measured_repetitions

Sweep = Any  # a perfsweep.config.SweepConfig (this layer does not import the config)


@dataclass(frozen=True)
class PackSettings:
    """The config's ``pack:`` section (schema: perfsweep/schemas/config.schema.yaml)."""

    runs: int = 1000
    minutes: float = 30.0
    seconds_per_run: float = 600.0

    @classmethod
    def from_sweep(cls, sweep: Sweep) -> "PackSettings":
        raw = sweep.extra.get("pack") or {}
        return cls(runs=int(raw.get("runs", cls.runs)), minutes=float(raw.get("minutes", cls.minutes)),
                   seconds_per_run=float(raw.get("seconds_per_run", sweep.timeout)))

    @property
    def size(self) -> int:
        """Runs per pack: at most ``runs``, and what fills ``minutes`` at ``seconds_per_run`` (at least 1)."""
        return max(1, min(self.runs, math.floor(self.minutes * 60 / self.seconds_per_run)))


@dataclass(frozen=True)
class Pack:
    pack_id: str
    round: int
    processes: int
    threads: int
    runs: tuple[Run, ...]

    def index(self, run: Run) -> int:
        return self.runs.index(run)


def pack_id(round_: int, processes: int, threads: int, index: int) -> str:
    return f"r{round_}-p{processes}t{threads}-{index:03d}"


def _group_key(run: Run) -> tuple[str, str]:
    """Runs that go together: a configuration's variants in one round (paired measurement)."""
    return split_variant(run[0])[0], run[1]


def plan(order: Mapping[Run, Mapping[str, int]], classes: Mapping[Run, tuple[int, int]], size: int,
         earlier: Mapping[str, Iterable[Run]] | None = None) -> dict[str, Pack]:
    """The packs of these runs. ``order``: each run's place in its round (perfsweep.sweep.order.run_order);
    ``classes``: each run's (processes, threads); ``earlier``: the assignment of an earlier start
    (:func:`read_plan`), whose runs keep their packs. Runs not in ``earlier`` fill new packs of at most
    ``size`` runs (a configuration's variants are never split, so a pack may hold a few more)."""
    packs: dict[str, Pack] = {}
    placed: set[Run] = set()
    top: dict[tuple[int, int, int], int] = defaultdict(lambda: -1)  # (round, p, t) -> highest index used
    for pid, members in (earlier or {}).items():
        try:
            round_, cls_, index = _parse_id(pid)
        except ValueError:
            continue
        top[(round_, *cls_)] = max(top[(round_, *cls_)], index)
        kept = tuple(r for r in members if r in order and r not in placed and r[2] == round_
                     and tuple(classes[r]) == cls_)
        if kept:
            packs[pid] = Pack(pid, round_, cls_[0], cls_[1], tuple(sorted(kept, key=lambda r: order[r]["position"])))
            placed.update(kept)
    todo: dict[tuple[int, int, int], list[Run]] = defaultdict(list)
    for run in order:
        if run not in placed:
            todo[(order[run]["round"], *classes[run])].append(run)
    for key in sorted(todo):
        round_, p, t = key
        groups: dict[tuple[str, str], list[Run]] = {}
        for run in sorted(todo[key], key=lambda r: order[r]["position"]):
            groups.setdefault(_group_key(run), []).append(run)
        chunks: list[list[Run]] = [[]]
        for group in groups.values():
            if chunks[-1] and len(chunks[-1]) + len(group) > size:
                chunks.append([])
            chunks[-1] += group
        for chunk in chunks:
            top[key] += 1
            pid = pack_id(round_, p, t, top[key])
            packs[pid] = Pack(pid, round_, p, t, tuple(chunk))
    return dict(sorted(packs.items(), key=lambda kv: (kv[1].round, order[kv[1].runs[0]]["position"], kv[0])))


def plan_sweep(sweep: Sweep, reps: Mapping[tuple[str, str], int] | None = None,
               order: Mapping[Run, Mapping[str, int]] | None = None) -> dict[str, Pack]:
    """The packs of a sweep (config ``bundle: packs``): its runs (``reps``: repetitions per (study,
    configuration), default what the results tree's plan measures now), their order (default from the
    seed) and classes (processes, threads per rank of the config's ``cluster:``), the assignment of
    the results tree's earlier starts kept."""
    configs = {(s.name, c.config_id): c for s in sweep.studies for c in s.measured_configurations()}
    if reps is None:
        reps = {(s.name, cid): n for s in sweep.studies for cid, n in measured_repetitions(s, sweep.results).items()}
    if order is None:
        order = run_order(sweep.seed, [(s, cid, k) for (s, cid), n in reps.items() for k in range(n)])
    cluster = ClusterSettings.from_config(sweep.extra.get("cluster"))
    classes = {}
    for key, cfg in configs.items():
        cls_ = (int(cfg.params[sweep.processes]), cluster.threads(cfg.params))
        classes.update({(*key, k): cls_ for k in range(reps.get(key, 0))})
    return plan(order, classes, PackSettings.from_sweep(sweep).size, read_plan(sweep.results))


def summary(packs: Mapping[str, Pack], settings: PackSettings) -> list[str]:
    """``perfsweep plan``'s lines on the packs: how many jobs, runs per pack, each pack's assumed length."""
    if not packs:
        return ["packs: none (no runs)"]
    sizes = sorted(len(p.runs) for p in packs.values())
    runs = sum(sizes)
    lines = [f"packs: {len(packs)} jobs for {runs:,} runs (bundle: packs; at most {settings.size} runs a pack, "
             f"{settings.seconds_per_run:g} s assumed per run): {sizes[0]}-{sizes[-1]} runs a pack, "
             f"about {sizes[-1] * settings.seconds_per_run / 60:.1f} minutes the longest"]
    shown = list(packs.items())
    for pid, pack in shown[:SHOWN]:
        studies = sorted({r[0] for r in pack.runs})
        lines.append(f"  {pid}: {len(pack.runs)} runs of round {pack.round}, {pack.processes} processes x "
                     f"{pack.threads} threads, about {len(pack.runs) * settings.seconds_per_run / 60:.1f} min "
                     f"({', '.join(studies)})")
    if len(shown) > SHOWN:
        lines.append(f"  ... and {len(shown) - SHOWN} more")
    return lines


SHOWN = 20  # packs perfsweep plan lists one by one


def _parse_id(pid: str) -> tuple[int, tuple[int, int], int]:
    r, cls_, index = pid.split("-")
    p, t = cls_[1:].split("t")
    return int(r[1:]), (int(p), int(t)), int(index)


def of_runs(packs: Mapping[str, Pack]) -> dict[Run, str]:
    """Each run's pack id."""
    return {run: pid for pid, pack in packs.items() for run in pack.runs}


def _run_text(run: Run) -> str:
    return f"{run[0]}/{run[1]}/rep{run[2]}"


def _text_run(text: str) -> Run:
    study, config_id, rep = text.rsplit("/", 2)
    return study, config_id, int(rep[3:])


def read_plan(results: str | Path) -> dict[str, list[Run]]:
    """The assignment an earlier start wrote (:func:`write_plan`); empty if there is none or it is unreadable."""
    try:
        data = json.loads(layout.packs_plan(results).read_text())
        return {pid: [_text_run(t) for t in runs] for pid, runs in data["packs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def pack_file_text(pack: Pack, specs: Mapping[Run, Any], outputs: Mapping[Run, str]) -> str:
    """What the pack's runner reads: its id, and per run its spec (deduplicated: a configuration's
    repetitions differ only in their number) and record path, in the pack's order."""
    texts: dict[str, str] = {}
    runs = []
    for run in pack.runs:
        spec = specs[run]
        base = replace(spec, repetition=0).to_json()
        key = texts.setdefault(base, f"s{len(texts)}")
        runs.append([key, run[2], outputs[run]])
    return json.dumps({"pack": pack.pack_id, "specs": {k: t for t, k in texts.items()}, "runs": runs},
                      separators=(",", ":")) + "\n"


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def write_plan(results: str | Path, packs: Mapping[str, Pack], files: Mapping[str, str]) -> None:
    """The assignment to ``<results>/packs/plan.json`` and each pack's file (``files``: pack id -> its
    :func:`pack_file_text`), atomically and only where they changed (nothing reruns)."""
    plan_text = json.dumps({"packs": {pid: [_run_text(r) for r in p.runs] for pid, p in packs.items()}},
                           separators=(",", ":")) + "\n"
    _write_changed(layout.packs_plan(results), plan_text)
    for pid, text in files.items():
        _write_changed(Path(layout.pack_file(results, pid)), text)


def read_pack_file(path: str | Path) -> tuple[str, list[tuple[str, int, str]], dict[str, str]]:
    """(pack id, [(spec key, repetition, record path)], {spec key: spec JSON}) of a pack file."""
    data = json.loads(Path(path).read_text())
    return data["pack"], [(k, int(rep), out) for k, rep, out in data["runs"]], data["specs"]
