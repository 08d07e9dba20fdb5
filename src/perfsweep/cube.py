"""Score-P CUBE profiles (``profile.cubex``), read through pycubexr as Extra-P 4.2.5 reads them.

Two uses::

    from perfsweep.cube import read_cube_dir, profile_regions
    df, params = read_cube_dir("mm_cube_1p")      # an Extra-P CUBE experiment directory -> tidy frame
    ranks = profile_regions("scorep-run/profile.cubex")   # one run's profile -> per-rank regions

An experiment directory holds one sub-folder per measurement, named as Extra-P wants it:
``<prefix>.<name><value><name><value>....r<repetition>`` (e.g. ``mm.x25y10z1.r1``; a decimal comma is
allowed), each with a ``*.cubex`` profile. As Extra-P's CUBE reader does by default (weak scaling,
exclusive values), a call path's value at a point is the mean over every profile of that point and
every location (process or thread) in it; the tidy frame has one row per profile and location. Call
paths are named ``main->foo->bar``; those that are not measured at every point are added to their
nearest ancestor that is, and parameters that do not vary are dropped. Unreadable profiles and folder
names raise :class:`~perfsweep.errors.ExtrapFormatError` naming the file.
"""

from __future__ import annotations

import itertools
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfsweep.errors import ExtrapFormatError
from perfsweep.tidy import COLUMNS
from perfsweep.values import PathLike


def _callpaths(roots) -> dict[int, str]:
    names: dict[int, str] = {}

    def walk(node, prefix: str) -> None:
        name = node.region.name if not prefix else f"{prefix}->{node.region.name}"
        names[node.id] = name
        for child in node.get_children():
            walk(child, name)

    for root in roots:
        walk(root, "")
    return names


def _exclusive_values(cube) -> tuple[dict[tuple[str, str], np.ndarray], list[int], dict[str, str]]:
    from pycubexr.utils.exceptions import MissingMetricError  # optional: only CUBE profiles need pycubexr

    callpaths = _callpaths(cube.get_root_cnodes())
    ranks: list[int] = []
    for group in cube._anchor_result.system_tree_nodes[0].all_location_groups():
        ranks += [int(group.rank)] * len(group.all_locations())
    values, units = {}, {}
    for metric in cube.get_metrics():
        try:
            mv = cube.get_metric_values(metric=metric, cache=False)
        except MissingMetricError:
            continue
        units[metric.name] = metric.units
        for cnode_id in mv.cnode_indices:
            v = mv.cnode_values(cube.get_cnode(cnode_id), convert_to_exclusive=True)
            values[callpaths[cnode_id], metric.name] = np.asarray(v.astype(float))  # also Min/MaxValues
    return values, ranks, units


def read_profile(path: PathLike) -> tuple[dict[tuple[str, str], np.ndarray], list[int], dict[str, str]]:
    """One profile's exclusive values: {(call path, metric): value per location}, the locations' process
    ranks, and each metric's unit. Metrics without data in the file are left out (as in Extra-P)."""
    from pycubexr import CubexParser  # optional: only CUBE profiles need pycubexr

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. pycubexr's note on a tar checksum it cannot check
            with CubexParser(str(path)) as cube:
                values, ranks, units = _exclusive_values(cube)
    except Exception as exc:  # noqa: BLE001 - whatever pycubexr raises on a damaged file, it is unreadable
        detail = " ".join(str(exc).split())[:120] or "truncated"
        raise ExtrapFormatError(f"{path}: not a readable CUBE profile ({type(exc).__name__}: {detail})") from None
    if not values:
        raise ExtrapFormatError(f"{path}: CUBE profile without measurements")
    for (callpath, metric), v in values.items():
        if not np.all(np.isfinite(v)):
            raise ExtrapFormatError(f"{path}: call path {callpath!r}, metric {metric!r}: non-finite value")
    return values, ranks, units


_PARAM_SPLIT = re.compile(r"([0-9.,]+)")


def _folder_parameters(folder: str, where: Path) -> tuple[list[str], list[float]]:
    """Extra-P's rule: the text between the first '.' and '.r' alternates names and values."""
    start = folder.find(".") + 1
    end = folder.find(".r")
    text = folder[start:end if end != -1 else None]
    parts = _PARAM_SPLIT.split(text)
    if len(parts) <= 1:
        raise ExtrapFormatError(f"{where}: no parameter in the folder name {folder!r} (expected e.g. "
                                "mm.x25y10.r1)")
    if "" in parts:
        parts.remove("")
    names = [n for i, n in enumerate(parts) if i % 2 == 0]
    if len(parts) % 2:
        raise ExtrapFormatError(f"{where}: folder name {folder!r}: parameter {names[-1]!r} has no value")
    try:
        values = [float(n.replace(",", ".").rstrip(".")) for i, n in enumerate(parts) if i % 2 == 1]
    except ValueError:
        raise ExtrapFormatError(f"{where}: folder name {folder!r}: a parameter value is not a number") from None
    return names, values


def read_cube_dir(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    """An Extra-P CUBE experiment directory as the tidy frame (see the module's docstring)."""
    root = Path(path)
    if not root.is_dir():
        raise ExtrapFormatError(f"{path}: not a directory of CUBE profiles")
    files = sorted(root.glob("*/[!.]*.cubex"))
    if not files:
        raise ExtrapFormatError(f"{path}: no CUBE profiles (*/*.cubex)")
    names: list[str] | None = None
    values_of: list[list[float]] = []
    for f in files:
        n, v = _folder_parameters(f.parent.name, f.parent)
        if names is None:
            names = n
        elif n != names:
            raise ExtrapFormatError(f"{f.parent}: parameters {n} differ from {names} of the other folders "
                                    "(same names in the same order needed)")
        values_of.append(v)
    assert names is not None
    varying = [i for i, _ in enumerate(names) if len({v[i] for v in values_of}) > 1]
    if not varying:
        raise ExtrapFormatError(f"{path}: no parameter varies between the folders")
    params = [names[i] for i in varying]
    points = [tuple(v[i] for i in varying) for v in values_of]
    for name in params:
        if params.count(name) > 1:
            raise ExtrapFormatError(f"{path}: parameter {name!r} appears twice in the folder names")

    data: dict[tuple[str, str], dict[tuple[float, ...], list[np.ndarray]]] = {}
    order = sorted(range(len(files)), key=lambda i: points[i])
    for point, group in itertools.groupby(order, key=lambda i: points[i]):
        for i in group:
            for key, v in read_profile(files[i])[0].items():
                data.setdefault(key, {}).setdefault(point, []).append(v)
    all_points = sorted(set(points))
    complete = {k: d for k, d in data.items() if len(d) == len(all_points)}
    for (callpath, metric), by_point in data.items():  # Extra-P: merge into the nearest complete ancestor
        if (callpath, metric) in complete:
            continue
        parent = callpath
        while (parent, metric) not in complete and "->" in parent:
            parent = parent.rsplit("->", 1)[0]
        if (parent, metric) not in complete:
            continue
        target = complete[parent, metric]
        for point, arrays in by_point.items():
            if point in target:
                shift = float(np.mean(np.concatenate(arrays)))
                target[point] = [a + shift for a in target[point]]
            else:
                target[point] = arrays
    rows = []
    for (callpath, metric), by_point in complete.items():
        for point in all_points:
            flat = np.concatenate(by_point[point])
            rows += [(*point, callpath, metric, rep, float(v)) for rep, v in enumerate(flat)]
    return pd.DataFrame(rows, columns=[*params, *COLUMNS]), params


def profile_regions(path: PathLike) -> list[dict[str, Any]]:
    """One run's Score-P profile as the ``ranks`` of a run record: per process rank, every call path
    with every metric, e.g. ``{"rank": 0, "regions": {"main->solve": {"time": 1.2, "visits": 10, ...}}}``.

    A rank's value of a call path is over its threads the maximum for time metrics (unit ``sec``,
    the elapsed time of the region) and the sum for all others (counts such as visits or bytes)."""
    values, ranks, units = read_profile(path)
    ids = sorted(set(ranks))
    index = {r: [i for i, x in enumerate(ranks) if x == r] for r in ids}
    out = []
    for r in ids:
        regions: dict[str, dict[str, float]] = {}
        for (callpath, metric), v in values.items():
            sel = v[index[r]]
            regions.setdefault(callpath, {})[metric] = float(sel.max() if units.get(metric) == "sec"
                                                            else sel.sum())
        out.append({"rank": r, "regions": {k: v for k, v in regions.items() if "time" in v}})
    return out
