"""What the history store says over the recorded sweeps: the sweeps (:func:`list_sweeps`) and, per study,
region and metric, the prediction at the study's target with its interval, the median measured there and
the lead orders (the scaling class) of every recorded sweep in order, with the change points
(:func:`trends`).

A series is one study in one setting (its digest) on one host fingerprint, in the order of measurement
(the last run's end; the recording's time for a tree without records). Its change points are those of
the log predictions found by ruptures' binary segmentation (cost l2 from cumulative sums, segments of one
sweep allowed, so a change in the latest sweep is found; PELT, exact, took 4 s a series of 1,000 sweeps):
the series divided by its noise, the larger of the sweeps' own (their intervals'
half width / 1.96) and the series' (the median absolute successive difference / 0.6745 / sqrt 2, robust
to the steps themselves), with the penalty ``PENALTY_PER_LOG_N`` log n + ``PENALTY`` per change (a
change of about 5 noise units between two halves of 6 sweeps is found; seeded replicates with no change
gave none: tests/test_history.py). A change point names the first sweep after the change. A class
change is a sweep whose lead orders differ from the sweep's before it.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from perfsweep.history import schema as t
from perfsweep.history.store import HistoryError, Store

PENALTY_PER_LOG_N = 3.0
PENALTY = 6.0
Z = 1.959964  # the entries' intervals are 95 % (perfsweep.history.sweep.LEVEL)


def list_sweeps(store: Store) -> dict[str, Any]:
    """Every recorded sweep, in the order of measurement."""
    when = t.WHEN
    with store.read() as conn:
        rows = conn.execute(select(t.sweeps, when.label("when")).order_by(when, t.sweeps.c.id)).mappings().all()
        names = defaultdict(list)
        for sweep_id, name in conn.execute(select(t.studies.c.sweep_id, t.studies.c.name).order_by(t.studies.c.id)):
            names[sweep_id].append(name)
    sweeps = [{"sweep": r["id"], "when": r["when"], "recorded_at": r["recorded_at"], "app_version": r["app_version"],
               "perfsweep_version": r["perfsweep_version"], "labels": json.loads(r["labels"]), "runs": r["runs"],
               "repetitions": bool(r["repetitions"]), "studies": names[r["id"]], "results": r["results"],
               "fingerprint": r["fingerprint"][:12]} for r in rows]
    return {"kind": "sweeps", "store": store.name, "sweeps": sweeps}


def trends(store: Store, study: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Every series (module docstring) of ``study`` (every study), over the sweeps with ``labels``."""
    labels = labels or {}
    when = t.WHEN.label("when")
    query = (select(t.sweeps.c.id.label("sweep"), when, t.sweeps.c.app_version, t.sweeps.c.labels,
                    t.sweeps.c.fingerprint, t.studies.c.name.label("study"), t.studies.c.digest, t.studies.c.target,
                    t.entries)
             .join(t.studies, t.studies.c.sweep_id == t.sweeps.c.id)
             .join(t.entries, t.entries.c.study_id == t.studies.c.id)
             .order_by(when, t.sweeps.c.id))
    if study is not None:
        query = query.where(t.studies.c.name == study)
    with store.read() as conn:
        rows = conn.execute(query).mappings().all()
    if study is not None and not rows:
        raise HistoryError(f"{store.name}: no recorded sweep has a study {study!r} (perfsweep history list shows them)")
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        own = json.loads(r["labels"])
        if not t.has_labels(own, labels):
            continue
        groups[r["study"], r["digest"], r["fingerprint"], r["region"], r["metric"]].append((r, own))
    settings: dict[str, list] = defaultdict(list)  # a study measured in several settings or hosts: numbered
    for name, digest, fingerprint, *_ in groups:
        if (digest, fingerprint) not in settings[name]:
            settings[name].append((digest, fingerprint))
    series = []
    for (name, digest, fingerprint, region, metric), members in groups.items():
        points = [{"sweep": r["sweep"], "when": r["when"], "app_version": r["app_version"], "labels": own,
                   "prediction": r["prediction"], "low": r["low"], "high": r["high"], "median": r["median"],
                   "orders": r["orders"], "form": r["form"], "lead_share": r["lead_share"]} for r, own in members]
        k = settings[name].index((digest, fingerprint))
        values = [p["prediction"] for p in points]
        changes = change_points(values, [p["low"] for p in points], [p["high"] for p in points])
        for p in points:
            p["change"] = False
        for i in changes:
            points[i]["change"] = True
        classes = [i for i in range(1, len(points)) if points[i]["orders"] != points[i - 1]["orders"]]
        for i, p in enumerate(points):
            p["class_change"] = i in classes
        first = members[0][0]
        series.append({"study": name if len(settings[name]) == 1 else f"{name} [setting {k + 1}]", "region": region,
                       "metric": metric, "unit": first["unit"], "direction": first["direction"],
                       "target": json.loads(first["target"]), "points": points,
                       "changes": [{"sweep": points[i]["sweep"], "ratio": _ratio(points, changes, i)} for i in changes],
                       "class_changes": [{"sweep": points[i]["sweep"], "from": points[i - 1]["orders"],
                                          "to": points[i]["orders"]} for i in classes]})
    series.sort(key=lambda s: (s["study"], s["metric"], s["region"]))
    return {"kind": "trends", "store": store.name, "labels": labels, "series": series}


def change_points(values: list, lows: list, highs: list) -> list[int]:
    """The indices of the first sweep after each change of the log values (module docstring)."""
    y = np.array([math.log(v) if v is not None and v > 0 else math.nan for v in values], float)
    if len(y) < 2 or not np.all(np.isfinite(y)):
        return []
    widths = [(math.log(h) - math.log(lo)) / (2 * Z) for lo, h in zip(lows, highs)
              if lo is not None and h is not None and lo > 0 and h > lo]
    own = float(np.median(widths)) if widths else 0.0
    d = np.diff(y)
    spread = float(np.median(np.abs(d - np.median(d)))) / 0.6745 / math.sqrt(2) if len(d) >= 3 else 0.0
    sigma = max(own, spread, 1e-6)
    import ruptures  # its import took 0.6 s here: only where a series is long enough to split

    z = (y / sigma).reshape(-1, 1)
    penalty = PENALTY_PER_LOG_N * math.log(len(y)) + PENALTY
    ends = ruptures.Binseg(custom_cost=_cumulative_l2(), min_size=1, jump=1).fit(z).predict(pen=penalty)
    return [e for e in ends if e < len(y)]


def _cumulative_l2():
    """ruptures' l2 cost (a segment's sum of squared deviations from its mean) from cumulative sums: O(1) a
    segment, where CostL2 takes the variance of the slice (bench/history_scale.py: PELT with CostL2 took 4 s
    for one series of 1,000 sweeps, 386 s for a study of 100 call paths)."""
    from ruptures.base import BaseCost  # (as ruptures above)

    class CumulativeL2(BaseCost):
        model = "l2-cumulative"
        min_size = 1

        def fit(self, signal):
            x = self.signal = np.asarray(signal, float).reshape(len(signal), -1)
            self.s1 = np.vstack([np.zeros(x.shape[1]), np.cumsum(x, axis=0)])
            self.s2 = np.vstack([np.zeros(x.shape[1]), np.cumsum(x * x, axis=0)])
            return self

        def error(self, start, end):
            n = end - start
            total = self.s1[end] - self.s1[start]
            return float(np.sum(self.s2[end] - self.s2[start] - total * total / n))

    return CumulativeL2()


def _ratio(points: list[dict], changes: list[int], i: int) -> float | None:
    """The step of the change at ``i``: the mean prediction of the segment after it over the one before."""
    bounds = [0, *changes, len(points)]
    k = bounds.index(i)
    before = [p["prediction"] for p in points[bounds[k - 1]:i]]
    after = [p["prediction"] for p in points[i:bounds[k + 1]]]
    return float(np.mean(after) / np.mean(before)) if before and after and np.mean(before) else None


# --- rendering ---------------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def flat_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per sweep (``list``) or per series and sweep (``trend``), for csv, md and text."""
    if table["kind"] == "sweeps":
        return [dict(s) for s in table["sweeps"]]
    out = []
    for s in table["series"]:
        for p in s["points"]:
            out.append({"study": s["study"], "region": s["region"], "metric": s["metric"], "unit": s["unit"],
                        "target": s["target"], "sweep": p["sweep"], "when": p["when"], "app_version": p["app_version"],
                        "labels": p["labels"], "prediction": p["prediction"], "low": p["low"], "high": p["high"],
                        "median": p["median"], "orders": p["orders"],
                        "change": "change" if p["change"] else "", "class_change": "class" if p["class_change"] else ""})
    return out


def render_table(table: dict[str, Any], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps(table, indent=1, default=str) + "\n"
    rows = flat_rows(table)
    if fmt == "csv":
        buf = io.StringIO()
        if rows:
            writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({k: _fmt(v) for k, v in r.items()} for r in rows)
        return buf.getvalue()
    head = [f"# history store {table['store']}"]
    if table["kind"] == "trends":
        head.append(f"# {len(table['series'])} series (study, region, metric); a change: the first sweep after a "
                    "step of the prediction at the target (ruptures, binary segmentation); class: the lead orders changed")
        for s in table["series"]:
            said = "; ".join(f"#{c['sweep']}" + (f" x{c['ratio']:.3f}" if c["ratio"] else "") for c in s["changes"])
            head.append(f"# {s['study']} / {s['region']} / {s['metric']}: changes at {said or 'none'}"
                        + (f"; class changes at {', '.join('#' + str(c['sweep']) for c in s['class_changes'])}"
                           if s["class_changes"] else ""))
    if not rows:
        return "\n".join(head + ["# nothing recorded"]) + "\n"
    columns = list(rows[0])
    cells = [[_fmt(r[c]) for c in columns] for r in rows]
    if fmt == "md":
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return "\n".join(head + [""] + lines) + "\n"
    widths = [max(len(c), *(len(row[k]) for row in cells)) for k, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(head + lines) + "\n"


def svg(series: dict[str, Any], width: int = 360, height: int = 90) -> str:
    """The series at a glance: the prediction (line) and its interval (band), the medians (dots), a change
    (red rule before its sweep), a class change (a hollow square)."""
    pts = series["points"]
    ys = [v for p in pts for v in (p["prediction"], p["low"], p["high"], p["median"]) if v is not None and v > 0]
    if not ys:
        return "<svg xmlns='http://www.w3.org/2000/svg' width='0' height='0'></svg>"
    lo, hi = math.log(min(ys)), math.log(max(ys))
    span = hi - lo or 1.0
    pad = 8

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(len(pts) - 1, 1))

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (math.log(v) - lo) / span

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
             f"aria-label='{html.escape(series['region'])} {html.escape(series['metric'])} over the sweeps'>"]
    band = [(x(i), y(p["high"])) for i, p in enumerate(pts) if p["high"]] + \
           [(x(i), y(p["low"])) for i, p in reversed(list(enumerate(pts))) if p["low"]]
    if band:
        parts.append("<polygon fill='#9ecae1' fill-opacity='0.5' points='"
                     + " ".join(f"{a:.1f},{b:.1f}" for a, b in band) + "'/>")
    line = [(x(i), y(p["prediction"])) for i, p in enumerate(pts) if p["prediction"]]
    parts.append("<polyline fill='none' stroke='#08519c' stroke-width='1.5' points='"
                 + " ".join(f"{a:.1f},{b:.1f}" for a, b in line) + "'/>")
    for i, p in enumerate(pts):
        if p["change"]:
            cx = (x(i) + x(i - 1)) / 2 if i else x(i)
            parts.append(f"<line class='change' x1='{cx:.1f}' x2='{cx:.1f}' y1='0' y2='{height}' stroke='#cb181d' "
                         "stroke-width='2'/>")
        if p["median"]:
            parts.append(f"<circle cx='{x(i):.1f}' cy='{y(p['median']):.1f}' r='2.5' fill='#252525'/>")
        if p["class_change"]:
            parts.append(f"<rect x='{x(i) - 4:.1f}' y='{pad - 6}' width='8' height='8' fill='none' stroke='#6a51a3'/>")
    parts.append("</svg>")
    return "".join(parts)


def write_html(table: dict[str, Any], path: str | Path, store_name: str = "") -> None:
    """The trend page: one self-contained HTML file (inline SVG figures, no script, no external link)."""
    esc = html.escape
    body = [f"<h1>perfsweep history: trends</h1><p>Store {esc(store_name or table['store'])}. Each row: one study, "
            "region and metric over the recorded sweeps in the order of measurement: the prediction at the study's "
            "target (line) with its 95 % interval (band), the median measured there (dots); a red rule before the "
            "first sweep after a change (ruptures, binary segmentation), a square where the lead orders changed.</p>",
            "<table><thead><tr><th>study</th><th>region</th><th>metric</th><th>target</th><th>over the sweeps</th>"
            "<th>changes</th><th>class changes</th><th>latest</th></tr></thead><tbody>"]
    for s in table["series"]:
        last = s["points"][-1]
        changes = ", ".join(f"#{c['sweep']}" + (f" (x{c['ratio']:.3f})" if c["ratio"] else "") for c in s["changes"])
        classes = ", ".join(f"#{c['sweep']} ({esc(c['from'])} &rarr; {esc(c['to'])})" for c in s["class_changes"])
        latest = f"{_fmt(last['prediction'])} [{_fmt(last['low'])}, {_fmt(last['high'])}] {esc(s['unit'] or '')}"
        body.append(f"<tr class='series'><td>{esc(s['study'])}</td><td>{esc(s['region'])}</td><td>{esc(s['metric'])}</td>"
                    f"<td>{esc(_fmt(s['target']))}</td><td>{svg(s)}</td><td class='changes'>{esc(changes) or 'none'}"
                    f"</td><td>{classes or 'none'}</td><td>{latest}</td></tr>")
    body.append("</tbody></table>")
    sweeps = sorted({(p["sweep"], p["when"], p["app_version"] or "", _fmt(p["labels"]))
                     for s in table["series"] for p in s["points"]})
    body.append("<h2>Sweeps</h2><table><thead><tr><th>sweep</th><th>measured</th><th>app version</th><th>labels</th>"
                "</tr></thead><tbody>" + "".join(f"<tr><td>#{a}</td><td>{esc(str(b))}</td><td>{esc(c)}</td>"
                                                 f"<td>{esc(d)}</td></tr>" for a, b, c, d in sweeps)
                + "</tbody></table>")
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>perfsweep history: trends</title>"
            "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
            "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:middle}"
            "td.changes{color:#cb181d}</style></head><body>" + "".join(body) + "</body></html>\n")
    Path(path).write_text(page, encoding="utf-8")
