"""Extra-P input formats: export any measurement set, import Extra-P's text, JSON and JSON Lines files.

The common currency is a tidy frame with one row per repetition: the parameter columns, ``region``,
``metric``, ``repetition`` and ``value``::

    from perfsweep.modeling.extrap_io import read_extrap, write_extrap_text, write_extrap_json
    df, params = read_extrap("relearn_2p_text.txt")          # .txt, .json or .jsonl
    write_extrap_text(df, params, "out.txt")                 # loads in Extra-P 4.2.5 (`extrap --text`)

Formats (Extra-P 4.2.5): text = ``PARAMETER`` lines, ``POINTS`` (``( a b ) ...`` or, for one parameter,
plain values), then ``REGION``/``METRIC`` and one ``DATA v1 v2 ...`` line per point in POINTS order;
JSON = ``{"parameters": [...], "measurements": {callpath: {metric: [{"point": [...], "values": [...]}]}}}``;
JSON Lines = one ``{"params": {...}, "callpath": ..., "metric": ..., "value": ...}`` per measurement.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

from perfsweep.errors import UserError

PathLike = str | os.PathLike[str]


class ExtrapFormatError(UserError):
    """A file that is not valid Extra-P input (one line with file and line number)."""


def _points_in(text: str, nparams: int, where: str) -> list[tuple[float, ...]]:
    groups = re.findall(r"\(([^)]*)\)", text)
    if groups:
        pts = [tuple(float(v) for v in g.split()) for g in groups]
    elif nparams == 1:
        pts = [(float(v),) for v in text.split()]
    else:
        raise ExtrapFormatError(f"{where}: POINTS for {nparams} parameters need ( a b ... ) groups")
    for p in pts:
        if len(p) != nparams:
            raise ExtrapFormatError(f"{where}: point {p} has {len(p)} values for {nparams} parameters")
    return pts


def read_extrap_text(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    params: list[str] = []
    points: list[tuple[float, ...]] = []
    region, metric = "", "time"
    index = 0
    rows = []
    with open(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(" ")
            rest = rest.strip()
            where = f"{path}: line {lineno}"
            if key == "PARAMETER":
                params.append(rest)
            elif key == "POINTS":
                points += _points_in(rest, len(params), where)
            elif key == "REGION":
                region, index = rest, 0
            elif key == "METRIC":
                metric, index = rest, 0
            elif key == "DATA":
                if index >= len(points):
                    raise ExtrapFormatError(f"{where}: more DATA lines than POINTS ({len(points)})")
                for rep, v in enumerate(rest.split()):
                    rows.append({**dict(zip(params, points[index])), "region": region, "metric": metric,
                                 "repetition": rep, "value": float(v)})
                index += 1
            else:
                raise ExtrapFormatError(f"{where}: unknown keyword {key!r}")
    if not params:
        raise ExtrapFormatError(f"{path}: no PARAMETER line")
    return pd.DataFrame(rows), params


def read_extrap_json(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    with open(path) as fh:
        data = json.load(fh)
    if "parameters" not in data or "measurements" not in data:
        raise ExtrapFormatError(f"{path}: expected keys 'parameters' and 'measurements' (Extra-P JSON)")
    params = list(data["parameters"])
    rows = []
    for region, metrics in data["measurements"].items():
        for metric, entries in metrics.items():
            for e in entries:
                values = e.get("values", [e["value"]] if "value" in e else [])
                for rep, v in enumerate(values):
                    rows.append({**dict(zip(params, map(float, e["point"]))), "region": region,
                                 "metric": metric, "repetition": rep, "value": float(v)})
    return pd.DataFrame(rows), params


def read_extrap_jsonl(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    rows, params, seen = [], [], {}
    with open(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                e = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ExtrapFormatError(f"{path}: line {lineno}: not JSON ({exc.msg})") from None
            for p in e["params"]:
                if p not in params:
                    params.append(p)
            key = (tuple(sorted(e["params"].items())), e.get("callpath", ""), e.get("metric", "time"))
            seen[key] = seen.get(key, -1) + 1
            rows.append({**{k: float(v) for k, v in e["params"].items()}, "region": e.get("callpath", ""),
                         "metric": e.get("metric", "time"), "repetition": seen[key], "value": float(e["value"])})
    return pd.DataFrame(rows), params


def read_extrap(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    """Read an Extra-P text (.txt), JSON (.json) or JSON Lines (.jsonl) file into the tidy frame."""
    suffix = Path(path).suffix.lower()
    reader = {".json": read_extrap_json, ".jsonl": read_extrap_jsonl}.get(suffix, read_extrap_text)
    return reader(path)


def _grouped(df: pd.DataFrame, params: list[str]):
    points = sorted({tuple(r) for r in df[params].itertuples(index=False)})
    for (region, metric), g in df.groupby(["region", "metric"], sort=False):
        by_point = {tuple(k): grp.sort_values("repetition")["value"].tolist()
                    for k, grp in g.groupby(params, sort=False)}
        yield region, metric, points, by_point


def write_extrap_text(df: pd.DataFrame, params: list[str], path: PathLike) -> None:
    """Write the tidy frame as an Extra-P text file (every region/metric needs every point)."""
    points = sorted({tuple(r) for r in df[params].itertuples(index=False)})
    fmt = lambda v: format(float(v), ".17g")  # noqa: E731
    lines = [f"PARAMETER {p}" for p in params] + [""]
    for pt in points:
        lines.append("POINTS ( " + " ".join(fmt(v) for v in pt) + " )")
    for region, metric, _, by_point in _grouped(df, params):
        missing = [pt for pt in points if pt not in by_point]
        if missing:
            raise ExtrapFormatError(f"region {region!r}, metric {metric!r}: no data for point {missing[0]}")
        lines += ["", f"REGION {region}", f"METRIC {metric}"]
        lines += ["DATA " + " ".join(fmt(v) for v in by_point[pt]) for pt in points]
    Path(path).write_text("\n".join(lines) + "\n")


def write_extrap_json(df: pd.DataFrame, params: list[str], path: PathLike) -> None:
    """Write the tidy frame in Extra-P's JSON input format."""
    out: dict = {"parameters": list(params), "measurements": {}}
    for region, metric, points, by_point in _grouped(df, params):
        out["measurements"].setdefault(region, {})[metric] = [
            {"point": list(pt), "values": by_point[pt]} for pt in points if pt in by_point]
    Path(path).write_text(json.dumps(out, indent=1))


def runs_to_tidy(runs: pd.DataFrame, params: list[str], region: str = "all", metric: str = "time") -> pd.DataFrame:
    """The pipeline's runs table (one row per repetition) as the tidy measurement frame."""
    ok = runs[runs["status"] == "ok"]
    out = ok[params].astype(float).copy()
    out["region"], out["metric"] = region, metric
    out["repetition"] = ok["repetition"].to_numpy()
    out["value"] = ok["time"].astype(float).to_numpy()
    return out.reset_index(drop=True)
