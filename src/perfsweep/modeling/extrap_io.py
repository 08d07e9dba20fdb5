"""Extra-P's input formats: export any measurement set, import every text, JSON and JSON Lines file
that Extra-P 4.2.5 reads, and Score-P CUBE experiment directories (see :mod:`perfsweep.cube`).

The common currency is a tidy frame with one row per repetition: the parameter columns, ``region``,
``metric``, ``repetition`` and ``value``::

    from perfsweep.modeling.extrap_io import read_extrap, write_extrap_text, write_extrap_json
    df, params = read_extrap("relearn_2p_text.txt")     # text, JSON, JSON Lines or a CUBE directory
    write_extrap_text(df, params, "out.txt")            # loads in Extra-P 4.2.5 (`extrap --text`)

Formats, as Extra-P 4.2.5 reads them (the format is told by the content, not the file name):

- text: ``PARAMETER x`` (or several names on one line: ``PARAMETER p q``), ``POINTS`` lines (``( a b )
  ( c d )`` or, for one parameter, plain values; any number of POINTS lines, their points in order),
  then ``REGION name`` / ``METRIC name`` and one ``DATA v1 v2 ...`` line (the repetitions) per point in
  POINTS order. Any whitespace (also tabs) separates; ``#`` starts a comment line. Without REGION or
  METRIC the names are empty, as in Extra-P.
- JSON: ``{"parameters": [...], "measurements": {callpath: {metric: [{"point": [...], "values": [...]}]}}}``,
  or Extra-P's older layout of id-numbered lists ``parameters``, ``callpaths``, ``metrics``,
  ``coordinates`` (``parameter_value_pairs``) and ``measurements`` (one value per entry).
- JSON Lines: one ``{"params": {...}, "callpath": ..., "metric": ..., "value": v or [v1, v2, ...]}`` per
  line; the parameters and their order come from the first line; callpath and metric default to
  ``<root>`` and ``<default>``.

Every (region, metric) must have data at every point (Extra-P refuses an experiment otherwise), values
must be finite numbers, and parameter names unique. A file that breaks a rule raises
:class:`ExtrapFormatError`: one line naming the file, the line or entry, and the value.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from perfsweep.errors import ExtrapFormatError
from perfsweep.cube import read_cube_dir
from perfsweep.tidy import COLUMNS
from perfsweep.values import PathLike


def _number(value: Any, where: str, what: str = "value") -> float:
    """A finite float from a JSON number or a text token, else a one-line error."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ExtrapFormatError(f"{where}: {what} {value!r} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ExtrapFormatError(f"{where}: {what} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise ExtrapFormatError(f"{where}: {what} {value!r} is not finite")
    return number


class _Builder:
    """Collects measurements in file order and checks what Extra-P's validate_experiment checks."""

    def __init__(self, path: PathLike) -> None:
        self.path = str(path)
        self.params: list[str] = []
        self.points: dict[tuple[float, ...], None] = {}  # insertion-ordered set
        self.data: dict[tuple[str, str], dict[tuple[float, ...], list[float]]] = {}

    def set_params(self, names: Iterable[Any], where: str) -> None:
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise ExtrapFormatError(f"{where}: parameter name {name!r} is not a non-empty string")
            if name in self.params:
                raise ExtrapFormatError(f"{where}: parameter {name!r} is given twice")
            self.params.append(name)

    def point(self, values: Iterable[Any], where: str) -> tuple[float, ...]:
        if isinstance(values, (int, float, str)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, (list, tuple)):
            raise ExtrapFormatError(f"{where}: point {values!r} is not a list of numbers")
        pt = tuple(_number(v, where, "coordinate") for v in values)
        if len(pt) != len(self.params):
            raise ExtrapFormatError(f"{where}: point {_fmt_point(pt)} has {len(pt)} values for "
                                    f"{len(self.params)} parameters ({', '.join(self.params)})")
        self.points.setdefault(pt, None)
        return pt

    def add(self, region: str, metric: str, pt: tuple[float, ...], values: Iterable[Any], where: str) -> None:
        if isinstance(values, (int, float, str)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, (list, tuple)):
            raise ExtrapFormatError(f"{where}: values {values!r} are not a number or a list of numbers")
        numbers = [_number(v, where) for v in values]
        if not numbers:
            raise ExtrapFormatError(f"{where}: no values for point {_fmt_point(pt)}")
        self.data.setdefault((region, metric), {}).setdefault(pt, []).extend(numbers)

    def frame(self) -> tuple[pd.DataFrame, list[str]]:
        if not self.params:
            raise ExtrapFormatError(f"{self.path}: no parameters (Extra-P input needs at least one)")
        if not self.data:
            raise ExtrapFormatError(f"{self.path}: no measurements")
        points = list(self.points)
        rows = []
        for (region, metric), by_point in self.data.items():
            if len(by_point) != len(points):
                missing = next(pt for pt in points if pt not in by_point)
                raise ExtrapFormatError(
                    f"{self.path}: region {region!r}, metric {metric!r}: data for {len(by_point)} of "
                    f"{len(points)} points (none for {_fmt_point(missing)})")
            for pt in points:
                for rep, v in enumerate(by_point[pt]):
                    rows.append((*pt, region, metric, rep, v))
        return pd.DataFrame(rows, columns=[*self.params, *COLUMNS]), list(self.params)


def _fmt_point(pt: tuple[float, ...]) -> str:
    return "(" + ", ".join(format(v, "g") for v in pt) + ")"


def _text_of(path: PathLike) -> str:
    try:
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise ExtrapFormatError(f"{path}: is a directory without CUBE profiles (*/*.cubex)") from None
    except OSError as exc:
        raise ExtrapFormatError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExtrapFormatError(f"{path}: not UTF-8 text (byte {exc.start}); Extra-P 3 binary "
                                "experiments are not supported") from None


def read_extrap_text(path: PathLike, text: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    b = _Builder(path)
    points: list[tuple[float, ...]] = []
    region, metric, index = "", "", 0
    for lineno, raw in enumerate((_text_of(path) if text is None else text).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, *more = line.split(None, 1)
        rest = " ".join(more[0].split()) if more else ""
        where = f"{path}: line {lineno}"
        if key == "PARAMETER":
            if points:
                raise ExtrapFormatError(f"{where}: PARAMETER after POINTS")
            b.set_params(rest.split() or [""], where)
        elif key == "POINTS":
            if not b.params:
                raise ExtrapFormatError(f"{where}: POINTS before any PARAMETER line")
            for group in _point_groups(rest, len(b.params), where):
                pt = b.point(group, where)
                if pt in points:
                    raise ExtrapFormatError(f"{where}: point {_fmt_point(pt)} is listed twice")
                points.append(pt)
        elif key == "REGION":
            region, index = rest, 0
        elif key == "METRIC":
            metric, index = rest, 0
        elif key == "DATA":
            if not points:
                raise ExtrapFormatError(f"{where}: DATA before any POINTS line")
            if index >= len(points):
                raise ExtrapFormatError(f"{where}: more DATA lines than POINTS ({len(points)}) "
                                        f"in region {region!r}, metric {metric!r}")
            if (region, metric) in b.data and points[index] in b.data[region, metric]:
                raise ExtrapFormatError(f"{where}: region {region!r}, metric {metric!r} is given twice")
            b.add(region, metric, points[index], rest.split(), where)
            index += 1
        else:
            raise ExtrapFormatError(f"{where}: unknown keyword {key[:40]!r} (expected PARAMETER, POINTS, "
                                    "REGION, METRIC or DATA)")
    return b.frame()


def _point_groups(text: str, nparams: int, where: str) -> list[list[str]]:
    if "(" in text or ")" in text:
        groups = re.findall(r"\(([^()]*)\)", text)
        if re.sub(r"\([^()]*\)", "", text).strip() or not groups:
            raise ExtrapFormatError(f"{where}: POINTS {text[:60]!r}: unbalanced parentheses")
        return [g.split() for g in groups]
    if nparams == 1:
        return [[v] for v in text.split()]
    raise ExtrapFormatError(f"{where}: POINTS for {nparams} parameters need ( a b ... ) groups")


def read_extrap_json(path: PathLike, text: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    text = _text_of(path) if text is None else text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.startswith("{") for ln in lines):  # as Extra-P: then it is JSON Lines
            return read_extrap_jsonl(path, text)
        raise ExtrapFormatError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ExtrapFormatError(f"{path}: top level is a {type(data).__name__}, not an object (Extra-P JSON)")
    return (_read_legacy_json if "callpaths" in data else _read_new_json)(path, data)


def _get(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict):
        raise ExtrapFormatError(f"{where}: {obj!r:.60} is not an object")
    if key not in obj:
        raise ExtrapFormatError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ExtrapFormatError(f"{where}: {key!r} is {value!r:.60}, not a {names}")
    return value


def _read_new_json(path: PathLike, data: dict) -> tuple[pd.DataFrame, list[str]]:
    b = _Builder(path)
    b.set_params(_get(data, "parameters", str(path), list), f"{path}: parameters")
    for region, metrics in _get(data, "measurements", str(path), dict).items():
        if not isinstance(metrics, dict):
            raise ExtrapFormatError(f"{path}: measurements[{region!r}] is not an object of metrics")
        for metric, entries in metrics.items():
            where = f"{path}: measurements[{region!r}][{metric!r}]"
            if not isinstance(entries, list):
                raise ExtrapFormatError(f"{where}: not a list of measurements")
            for i, e in enumerate(entries):
                w = f"{where}[{i}]"
                pt = b.point(_get(e, "point", w, (list, int, float)), w)
                if pt in b.data.get((region, metric), {}):
                    raise ExtrapFormatError(f"{w}: point {_fmt_point(pt)} is given twice")
                values = e["values"] if "values" in e else _get(e, "value", w, (int, float, list))
                b.add(region, metric, pt, values, w)
    return b.frame()


def _by_id(data: dict, key: str, path: PathLike) -> list[dict]:
    entries = _get(data, key, str(path), list)
    for i, e in enumerate(entries):
        _get(e, "id", f"{path}: {key}[{i}]", (int, float, str))
    ids = [e["id"] for e in entries]
    if len(set(map(str, ids))) != len(ids):
        raise ExtrapFormatError(f"{path}: {key}: ids repeat")
    try:
        return sorted(entries, key=lambda e: float(e["id"]))
    except ValueError:
        raise ExtrapFormatError(f"{path}: {key}: ids are not numbers") from None


def _read_legacy_json(path: PathLike, data: dict) -> tuple[pd.DataFrame, list[str]]:
    """Extra-P's older JSON: id-numbered lists; measurement ids refer to the 1-based sorted position."""
    b = _Builder(path)
    b.set_params([_get(p, "name", f"{path}: parameters[{i}]", str)
                  for i, p in enumerate(_by_id(data, "parameters", path))], f"{path}: parameters")
    names = {key: [_get(e, "name", f"{path}: {key}[{i}]", str) for i, e in enumerate(_by_id(data, key, path))]
             for key in ("callpaths", "metrics")}
    coords = []
    for i, c in enumerate(_by_id(data, "coordinates", path)):
        w = f"{path}: coordinates[{i}]"
        pairs = _get(c, "parameter_value_pairs", w, list)
        for pair in pairs:
            _get(pair, "parameter_id", w, (int, float, str))
            _get(pair, "parameter_value", w, (int, float, str))
        pairs = sorted(pairs, key=lambda pv: float(_number(pv["parameter_id"], w, "parameter_id")))
        coords.append(b.point([pv["parameter_value"] for pv in pairs], w))
    for i, m in enumerate(_get(data, "measurements", str(path), list)):
        w = f"{path}: measurements[{i}]"
        index = {}
        for key, n in (("coordinate_id", len(coords)), ("callpath_id", len(names["callpaths"])),
                       ("metric_id", len(names["metrics"]))):
            v = _number(_get(m, key, w, (int, float, str)), w, key)
            if not v.is_integer() or not 1 <= v <= n:
                raise ExtrapFormatError(f"{w}: {key} {m[key]!r} is not one of 1..{n}")
            index[key] = int(v) - 1
        b.add(names["callpaths"][index["callpath_id"]], names["metrics"][index["metric_id"]],
              coords[index["coordinate_id"]], [_get(m, "value", w, (int, float, str))], w)
    return b.frame()


def read_extrap_jsonl(path: PathLike, text: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    b = _Builder(path)
    for lineno, raw in enumerate((_text_of(path) if text is None else text).splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            e = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ExtrapFormatError(f"{where}: not JSON ({exc.msg})") from None
        params = _get(e, "params", where, dict)
        if not b.params:
            b.set_params(list(params), where)
        missing = [p for p in b.params if p not in params]
        if missing:
            raise ExtrapFormatError(f"{where}: params lack {missing[0]!r} (the first line has "
                                    f"{', '.join(b.params)})")
        extra = [p for p in params if p not in b.params]
        if extra:
            raise ExtrapFormatError(f"{where}: parameter {extra[0]!r} is not one of the first line's "
                                    f"({', '.join(b.params)})")
        pt = b.point([params[p] for p in b.params], where)
        callpath = _get(e, "callpath", where, str) if "callpath" in e else "<root>"
        metric = _get(e, "metric", where, str) if "metric" in e else "<default>"
        b.add(callpath, metric, pt, _get(e, "value", where, (int, float, str, list)), where)
    return b.frame()


def read_extrap(path: PathLike) -> tuple[pd.DataFrame, list[str]]:
    """Read an Extra-P text, JSON or JSON Lines file, or a CUBE experiment directory, into the tidy frame.

    The format is told by the content: a directory is a set of CUBE profiles; a ``.jsonl`` file or one
    that starts with ``{"params":`` JSON Lines; one whose first non-blank character is ``{`` or ``[``
    JSON (or JSON Lines, as in Extra-P); anything else Extra-P's text format."""
    if os.path.isdir(path):
        return read_cube_dir(path)
    text = _text_of(path)
    if not text.strip():
        raise ExtrapFormatError(f"{path}: empty file")
    if Path(path).suffix.lower() == ".jsonl" or re.match(r'\s*\{\s*"params"\s*:', text):
        return read_extrap_jsonl(path, text)
    if text.lstrip()[:1] in ("{", "["):
        return read_extrap_json(path, text)
    return read_extrap_text(path, text)


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
