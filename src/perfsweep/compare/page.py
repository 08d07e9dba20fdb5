"""The HTML page of ``perfsweep compare --html PATH``: one self-contained file (figures inlined as SVG data,
:mod:`perfsweep.compare.figure`), laid out like the Snakemake report's pages: a title bar, the verdicts'
summary, the table sorted by impact, and per row (the first ``MAX_FIGURES`` in the table's order) both
models' curves over each parameter with the other parameters at the target, the measured medians of both
sweeps, and the ratio B/A with its interval."""

from __future__ import annotations

import html
import math
from pathlib import Path

from perfsweep.compare.figure import figure
from perfsweep.compare.judge import CompareResult, Row
from perfsweep.compare.render import display_table, summary_lines
from perfsweep.errors import UserError

MAX_FIGURES = 40  # rows drawn; the table lists every row
COLOURS = {"regression": "#c0392b", "improvement": "#1e8449", "no significant change": "#555",
           "inconclusive": "#b9770e"}

STYLE = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 0; color: #222; }
header { background: #2b3e50; color: #fff; padding: 0.8em 1.5em; }
header h1 { font-size: 1.3em; margin: 0; } header p { margin: 0.2em 0 0; font-size: 0.9em; color: #cfd8e0; }
main { padding: 1em 1.5em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f5f7; } tr:hover td { background: #fafbfc; }
.verdict { font-weight: 600; } .muted { color: #888; }
section.row { border-top: 1px solid #ddd; padding-top: 0.5em; margin-top: 1em; }
code { font-size: 0.9em; } .summary li { margin: 0.15em 0; }
"""


def write_html(result: CompareResult, path: str) -> None:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page(result), encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--html {path}: cannot write it ({exc.strerror or exc})") from None


def page(result: CompareResult) -> str:
    code = result.exit_code()
    title = "Regression" if code else "No gated regression"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>perfsweep compare: {html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<header><h1>perfsweep compare: {html.escape(title)} (exit {code})</h1>"
             f"<p>A = {html.escape(result.a)} &nbsp; B = {html.escape(result.b)}</p></header><main>",
             "<ul class='summary'>" + "".join(f"<li>{html.escape(line.lstrip('# '))}</li>"
                                              for line in summary_lines(result)[1:]) + "</ul>"]
    table = display_table(result)
    anchors = {id(r): f"row{k}" for k, r in enumerate(result.rows)}
    parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in table.columns) + "</tr>")
    for k, (r, (_, rec)) in enumerate(zip(result.rows, table.iterrows())):
        cells = []
        for col in table.columns:
            text = html.escape(str(rec[col]))
            if col == "verdict":
                text = f"<span class='verdict' style='color:{COLOURS.get(r.verdict, '#222')}'>{text}</span>"
            if col == "region" and k < MAX_FIGURES:
                text = f"<a href='#{anchors[id(r)]}'>{text}</a>"
            cells.append(f"<td>{text}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    for r in result.rows[:MAX_FIGURES]:
        parts.append(_section(r, anchors[id(r)], result.level))
    if len(result.rows) > MAX_FIGURES:
        parts.append(f"<p class='muted'>{len(result.rows) - MAX_FIGURES} more rows in the table (not drawn).</p>")
    parts.append("<p class='muted'>The ratio's interval: log B/A normal with the variance of both sweeps' resampled "
                 "models' log predictions (with several baselines, their spread too); verdicts judge each row's own "
                 "ratio, Holm-corrected over every gating test "
                 "(perfsweep.compare).</p></main></body></html>")
    return "\n".join(parts)


def _section(r: Row, anchor: str, level: float) -> str:
    ratio = (f"B/A = {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}] ({level:.0%})" if math.isfinite(r.low)
             else f"B/A = {r.ratio:.3g}")
    if math.isfinite(r.mde):
        ratio += f"; minimum detectable effect {r.mde:.1%}"
    if r.baselines > 1:
        ratio += f" (against {r.baselines} baselines)"
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in r.notes)
    return (f"<section class='row' id='{anchor}'><h3>{html.escape(r.study)}: {html.escape(r.region)} / "
            f"{html.escape(r.metric)} &mdash; <span style='color:{COLOURS.get(r.verdict, '#222')}'>"
            f"{html.escape(r.verdict)}</span></h3>"
            f"<p>A: <code>{html.escape(r.model_a)}</code> (lead orders {html.escape(r.orders_a)}, "
            f"lead share {_pct(r.share_a)})<br>B: <code>{html.escape(r.model_b)}</code> (lead orders "
            f"{html.escape(r.orders_b)}, lead share {_pct(r.share_b)})<br>scaling: {html.escape(r.scaling)}; "
            f"at {html.escape(', '.join(f'{k}={v:g}' for k, v in r.target.items()))}: {ratio}; "
            f"share {f'{r.share:.1%}' if math.isfinite(r.share) else '-'}</p>" + (f"<ul>{notes}</ul>" if notes else "") + figure(r, level) + "</section>")


def _pct(v: float) -> str:
    return f"{v:.0%}" if math.isfinite(v) else "-"
