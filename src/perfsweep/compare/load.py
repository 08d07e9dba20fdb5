"""The two sides of ``perfsweep compare``: what A and B are read from, each as a :class:`Side` (per study its
entries, one per region and metric: the model with its resamples, and the measured medians).

A side is a results directory (``models/<study>/models.json``, with ``tables/<study>/aggregate.csv``
for the measured medians), a models.json (or a directory holding one, as ``perfsweep models --out``
writes), or an Extra-P input (text, JSON, JSON Lines or a CUBE directory), which is modelled here as
the pipeline models a study (``BOOTSTRAP`` resamples of the repetitions).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from perfsweep import layout
from perfsweep.apps.metric_kinds import MetricKind, kind_of
from perfsweep.errors import CompareError
from perfsweep.modeling import FitOptions
from perfsweep.modeling.extrap_io import read_extrap
from perfsweep.modeling.extrap_models import fit_extrap
from perfsweep.modeling.model import Model
from perfsweep.modeling.pipeline import repetitions
from perfsweep.modeling.predict import _check_model, entry_model, load_entry
from perfsweep.modeling.terms import Term

BOOTSTRAP = 40  # resamples when an Extra-P input is modelled here (the pipeline's models stage: 160)
EXTRAP_STUDY = "input"  # the one study of an Extra-P input (so that two inputs' call paths match)
MODELS_JSON = layout.file_name("models", "models_json")  # also in a folder of its own


def _layout(root: Path) -> dict[str, tuple[Path, Path]]:
    """Where a results directory keeps each study's models and aggregate table (perfsweep.layout):
    {study: (its models.json, its aggregate.csv)}."""
    return layout.study_models(root)


def _is_results_dir(root: Path) -> bool:
    return root.is_dir() and layout.models_dir(root).is_dir()


def is_results(side: Side) -> bool:
    """Whether the side was read from a results directory (not a single file)."""
    return _is_results_dir(Path(side.path))


@dataclass
class Entry:
    model: Model
    points: np.ndarray  # measured configurations (N x parameters) ...
    medians: np.ndarray  # ... and their medians (or the model's means where no aggregate is at hand)
    source: str  # the file it came from
    kind: MetricKind | None = None  # unit and direction as models.json declares them (None: guessed, kind())
    rounds: np.ndarray | None = None  # per point its repetitions in round order (N x k, NaN-padded; the aggregate's
    # values), read for a paired measurement only (load_paired)

    @property
    def counts(self) -> tuple[int, ...]:
        """Per point the repetitions measured (() where the rounds were not read)."""
        return () if self.rounds is None else tuple(int(c) for c in np.sum(~np.isnan(self.rounds), axis=1))

    def kind_of(self, metric: str) -> MetricKind:
        """The metric's unit and which way is better: declared in models.json, else guessed from the name."""
        return self.kind or kind_of(metric)


@dataclass
class Side:
    path: str
    studies: dict[str, dict[tuple[str, str], Entry]]
    params: dict[str, list[str]]  # per study its varied parameters
    files: dict[str, str]  # per study the file it was read from
    variant: str | None = None  # paired measurement: the variant this side is (load_paired)


def load_paired(path: str | os.PathLike[str], pick: Sequence[str] = ()) -> tuple[Side, Side]:
    """The two variants of a paired measurement's results tree (config key ``variants:``; studies
    ``<study>@<variant>``) as A and B: ``pick`` (two variant names), else the config's first two
    (``plan/variants.json``). Both must have measured the same configurations the same number of times
    (their runs then pair by round: perfsweep.compare.paired)."""
    root = Path(path)
    whole = load_side(root, rounds=True)
    found = _variants(root, whole)
    if not found:
        raise CompareError(f"{root}: no variants to pair (a results tree of a config with variants:, paired "
                           "measurement); to compare two sweeps give both: perfsweep compare BASE NEW")
    names = list(pick) or found[:2]
    if len(names) != 2 or names[0] == names[1]:
        raise CompareError(f"--variants {','.join(names)}: give two different variants A,B (known: {', '.join(found)})")
    if len(found) < 2 or any(v not in found for v in names):
        raise CompareError(f"{root}: variant {next((v for v in names if v not in found), found[0])!r} has no models "
                           f"(variants with models: {', '.join(found)})")
    a, b = (_variant_side(whole, v) for v in names)
    for study in [s for s in a.studies if s in b.studies]:
        for key in [k for k in a.studies[study] if k in b.studies[study]]:
            ea, eb = a.studies[study][key], b.studies[study][key]
            if ea.points.shape != eb.points.shape or not np.allclose(ea.points, eb.points) or ea.counts != eb.counts:
                raise CompareError(f"{eb.source}: study {study}: variants {names[0]} and {names[1]} measured other "
                                   f"configurations or repetitions ({'/'.join(key)}: {len(ea.points)} and "
                                   f"{len(eb.points)} points, {sum(ea.counts)} and {sum(eb.counts)} runs): paired "
                                   "measurement compares the same rounds; run the sweep to its end (perfsweep run)")
    return a, b


def _variants(root: Path, side: Side) -> list[str]:
    """The variants of a results tree with models: in the config's order (plan/variants.json), else by name."""
    have = {layout.split_variant(s)[1] for s in side.studies} - {None}
    try:
        listed = json.loads(layout.variants_file(root).read_text()).get("variants", [])
    except (OSError, ValueError, AttributeError):
        listed = []
    return [v for v in listed if v in have] + sorted(have - set(listed))


def _variant_side(whole: Side, variant: str) -> Side:
    """The studies of one variant, under the config's study names."""
    side = Side(f"{whole.path} ({variant})", {}, {}, {}, variant)
    for name in whole.studies:
        study, v = layout.split_variant(name)
        if v == variant:
            side.studies[study], side.params[study], side.files[study] = (whole.studies[name], whole.params[name],
                                                                          whole.files[name])
    return side


def load_side(path: str | os.PathLike[str], rounds: bool = False) -> Side:
    """A results directory, a models.json (or a directory holding one) or an Extra-P input; ``rounds``:
    with every point's repetitions (Entry.rounds: a paired measurement's pairs of runs)."""
    root = Path(path)
    if not root.exists():
        raise CompareError(f"{root}: no such file or directory")
    if _is_results_dir(root):
        found = _layout(root)
        if not found:
            raise CompareError(f"{root}: a results directory without models (no {layout.pattern('models', 'models_json')}): "
                               "run the sweep (perfsweep run) until its models stage has written them")
        side = Side(str(root), {}, {}, {})
        for study, (file, aggregate) in found.items():
            _add_models(side, file, study, aggregate, rounds)
        return side
    if root.is_dir() and (root / MODELS_JSON).is_file():
        root = root / MODELS_JSON
    if root.is_file() and root.suffix == ".json" and _is_models_json(root):
        side = Side(str(path), {}, {}, {})
        _add_models(side, root, None, None)
        return side
    return _extrap_side(root)


def _is_models_json(path: Path) -> bool:
    try:
        head = path.read_bytes()[:4096].lstrip()
    except OSError:
        return False
    return head.startswith(b"[") and (b'"model"' in head or head.rstrip() in (b"[", b"[]"))


def _add_models(side: Side, file: Path, study: str | None, aggregate: Path | None, with_rounds: bool = False) -> None:
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        load_entry(file)  # its one-line error
        raise
    except (OSError, ValueError) as exc:
        raise CompareError(f"{file}: not a valid models.json ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CompareError(f"{file}: not a valid models.json (not a list of model entries)")
    if not entries:
        raise CompareError(f"{file}: no models (the study's models.csv beside it says why)")
    medians = _medians(aggregate) if aggregate is not None and aggregate.is_file() else None
    terms: dict = {}  # one Term object per distinct term of the file (resamples share them)
    for k, e in enumerate(entries):
        region, metric = e.get("region"), e.get("metric")
        if not isinstance(region, str) or not isinstance(metric, str):
            raise CompareError(f"{file}: entry {k}: region {region!r} / metric {metric!r} are not names")
        try:  # every check of perfsweep predict; damage in its words (load_entry reads the file again)
            model = _entry_model(e, file, terms)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, ArithmeticError) as exc:
            load_entry(file, region, metric)
            raise CompareError(f"{file}: region {region!r}, metric {metric!r}: not a valid model "
                               f"({type(exc).__name__} {str(exc)[:120]})") from None
        name = study or str(e.get("study") or file.parent.name)
        names = side.params.setdefault(name, list(model.param_names))
        if names != list(model.param_names):
            raise CompareError(f"{file}: {region}/{metric}: parameters {', '.join(model.param_names)} differ "
                               f"from the study's other models ({', '.join(names)})")
        side.files[name] = str(file)
        points, values = np.asarray(model.points, float), np.asarray(model.values, float)
        rounds = None
        if medians is not None and (region, metric) in medians:
            table = medians[region, metric]
            if all(p in table for p in names):
                points, values = _numbers(table, names, aggregate), _numbers(table, ["median"], aggregate)[:, 0]
                if with_rounds and "values" in table:
                    rounds = _rounds(table, aggregate)
        if not values.size:
            points = np.empty((0, len(names)))
        side.studies.setdefault(name, {})[(region, metric)] = Entry(model, points.reshape(len(values), len(names)),
                                                                    values, str(file), kind_of(metric, row=e), rounds)


def _entry_model(e: dict, file: Path, terms: dict) -> Model:
    """predict.entry_model with the resampled models' terms read once per distinct term: Fraction
    parsing was 70 % of the time of loading 1,000 call paths of 41 models each."""
    boots = e["model"].get("bootstrap") or []
    model = entry_model({**e, "model": {**e["model"], "bootstrap": []}}, file)

    def term(data: list) -> Term:
        key = tuple(tuple(f) for f in data)
        if key not in terms:
            terms[key] = Term.from_list(data)
        return terms[key]

    model.bootstrap = [Model(model.param_names, [term(t) for t in b["terms"]], np.asarray(b["coefficients"], dtype=float),
                             reciprocal=model.reciprocal) for b in boots]
    _check_model(model, f"{file}: region {e['region']!r}, metric {e['metric']!r}: model")
    return model


def _medians(aggregate: Path) -> dict[tuple[str, str], pd.DataFrame] | None:
    """The aggregate's design points (validation points too: they are measurements) per (region, metric)."""
    try:
        agg = pd.read_csv(aggregate)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CompareError(f"{aggregate}: not a readable aggregate table ({str(exc).splitlines()[0][:160]})") from None
    if not {"region", "metric", "median"} <= set(agg.columns):
        raise CompareError(f"{aggregate}: not an aggregate table (needs columns region, metric, median)")
    if "oversubscribed" in agg:
        agg = agg[~agg["oversubscribed"].astype(str).str.lower().isin(("true", "1"))]
    return {key: g for key, g in agg.groupby(["region", "metric"], sort=False)}


def _numbers(table: pd.DataFrame, columns: list[str], aggregate: Path | None) -> np.ndarray:
    """The columns as floats; a value that is no number is one line naming the file, line, column and value."""
    out = np.empty((len(table), len(columns)))
    for k, column in enumerate(columns):
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() & table[column].notna() | ~np.isfinite(values.fillna(0.0))
        if bad.any():
            index = bad.idxmax()
            raise CompareError(f"{aggregate}: line {int(index) + 2}, column {column}: {table[column][index]!r} is not "
                               f"a number (region {table['region'][index]!r}, metric {table['metric'][index]!r})")
        out[:, k] = values.to_numpy(float)
    return out


def _rounds(table: pd.DataFrame, aggregate: Path) -> np.ndarray:
    """Every point's repetitions in round order (the aggregate's ``values``: the runs in repetition order)."""
    try:
        return repetitions(table)
    except ValueError:
        bad = next(i for i, cell in table["values"].items() if not _all_numbers(cell))
        raise CompareError(f"{aggregate}: line {int(bad) + 2}, column values: {table['values'][bad]!r} is not a list of "
                           f"numbers (region {table['region'][bad]!r}, metric {table['metric'][bad]!r})") from None


def _all_numbers(cell) -> bool:
    try:
        [float(v) for v in str(cell).split()]
    except ValueError:
        return False
    return True


def _extrap_side(path: Path) -> Side:
    if path.is_dir() and not any(path.iterdir()):
        raise CompareError(f"{path}: an empty directory: no models (give a results directory, a models.json "
                           "or an Extra-P input)")
    if path.is_dir() and not any(path.glob("*/*.cubex")) and not any(path.glob("*.cubex")):
        raise CompareError(f"{path}: no models: neither a results directory ({layout.pattern('models', 'models_json')}), "
                           "a directory with a models.json, nor a directory of CUBE profiles")
    read_extrap(path)  # its format errors, one line each, before the modelling
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, entries = fit_extrap(path, FitOptions(bootstrap=BOOTSTRAP))
    if not entries:
        why = "; ".join(sorted(set(table["reason"].astype(str)))) if len(table) else "no call paths"
        raise CompareError(f"{path}: no models ({why})")
    side = Side(str(path), {EXTRAP_STUDY: {}}, {}, {EXTRAP_STUDY: str(path)})
    for e in entries:
        model = Model.from_dict(e["model"])
        side.params[EXTRAP_STUDY] = list(model.param_names)
        side.studies[EXTRAP_STUDY][(e["region"], e["metric"])] = Entry(model, np.asarray(model.points, float),
                                                                       np.asarray(model.values, float), str(path))
    return side
