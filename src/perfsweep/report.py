"""What the HTML report adds beyond the per-study figures: one figure per fitted model, and the
study's tables as HTML pages (the Snakemake report embeds HTML, but shows a CSV only as a download).

Usage (what workflow/rules/report.smk calls through scripts/plot_models.py, scripts/report_tables.py)::

    from perfsweep import report
    report.model_figures("results/models/nm/models.json", "results/models/nm/predictions.csv",
                         "results/figures/nm/models", study="nm")
    # -> results/figures/nm/models/time__all.png (+ .csv), time__all__vs_measurement.png (+ .csv), ...
    report.tables_page([("Variability", "results/tables/nm/variability.csv")], "variability.html",
                       title="nm: variability")
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from perfsweep.modeling.model import Model
from perfsweep.plots import models as model_plots

PathLike = str | os.PathLike[str]

# metrics whose values are seconds (the run's time and the per-rank phases); anything else is unitless
TIME_METRICS = {"time", "comm", "compute", "init", "io"}


def model_slug(region: str, metric: str) -> str:
    """A file name for the model of (region, metric): 'step/forces', 'time' -> 'time__step-forces'."""
    return f"{metric}__{re.sub(r'[^A-Za-z0-9_.=-]+', '-', region).strip('-') or 'root'}"


def _unit(metric: str) -> str:
    return f"{metric} [s]" if metric in TIME_METRICS else metric


def model_figure(model: Model, path: PathLike, title: str, unit: str = "time [s]") -> pd.DataFrame:
    """The shape of one model over the points it was fitted to: a curve (1 parameter), contour lines
    (2, seed 001 Fig. 6) or stacked slices (3, Fig. 7). With four or more parameters the first three
    are drawn and the others held at their middle measured value (named in the title)."""
    names = list(model.param_names)
    points = pd.DataFrame(np.asarray(model.points, dtype=float).reshape(-1, len(names)), columns=names)
    points["measured"] = np.asarray(model.values, dtype=float)
    formula = str(model)
    if len(names) == 1:
        return model_plots.line(model.predict, names[0], points, "measured", formula, model.adj_r2, path, title,
                                unit)
    if len(names) == 2:
        return model_plots.contour(model.predict, names, points, formula, model.adj_r2, path, title, unit)
    shown, rest = names[:3], names[3:]
    # the middle of the measured values (a value that was measured, not an interpolated one)
    held = {n: float(np.sort(points[n].unique())[len(points[n].unique()) // 2]) for n in rest}
    f = model_plots.hold(model.predict, names, shown, held) if held else model.predict
    if held:
        title += " at " + ", ".join(f"{n} = {v:g}" for n, v in held.items())
        points = points[np.logical_and.reduce([points[n] == v for n, v in held.items()])]
    return model_plots.slices(f, shown, points, formula, model.adj_r2, path, title, unit)


def model_figures(models_json: PathLike, predictions: PathLike, out_dir: PathLike, study: str) -> list[Path]:
    """Every model of a study as a figure, plus its model-vs-measurement figure; returns the PNG paths.

    Names: ``<metric>__<region>.png`` and ``<metric>__<region>__vs_measurement.png``, each with its CSV."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    entries = json.loads(Path(models_json).read_text())
    try:
        pred = pd.read_csv(predictions)
    except pd.errors.EmptyDataError:
        pred = pd.DataFrame(columns=["region", "metric"])
    written: list[Path] = []
    for e in entries:
        model = Model.from_dict(e["model"])
        slug = model_slug(e["region"], e["metric"])
        title = f"{study}: {e['metric']} of region {e['region']} ({', '.join(model.param_names)})"
        model_figure(model, out / f"{slug}.png", title, _unit(e["metric"]))
        written.append(out / f"{slug}.png")
        mine = pred[(pred["region"] == e["region"]) & (pred["metric"] == e["metric"])]
        if len(mine):
            model_plots.model_vs_measurement(mine.reset_index(drop=True), out / f"{slug}__vs_measurement.png", title)
            written.append(out / f"{slug}__vs_measurement.png")
    return written


STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 1em; }
h2 { font-size: 15px; margin: 1.2em 0 0.3em; }
p.note { color: #444; max-width: 60em; }
table { border-collapse: collapse; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #eee; position: sticky; top: 0; }
td.text { text-align: left; }
tr.flagged td { background: #fbe3e3; }
"""


def _cell(v) -> tuple[str, str]:
    """(text, css class) of one table cell: numbers with 4 significant digits, right-aligned."""
    if isinstance(v, (bool, np.bool_)):
        return ("yes" if v else "no"), "text"
    if isinstance(v, (int, np.integer)):
        return str(v), ""
    if isinstance(v, (float, np.floating)):
        return ("" if np.isnan(v) else f"{v:.4g}"), ""
    return html.escape(str(v)), "text"


def table_html(df: pd.DataFrame) -> str:
    """One DataFrame as an HTML table; rows with a true 'flagged' column are shaded."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    flagged = df["flagged"].astype(str).str.lower().eq("true") if "flagged" in df.columns else None
    for i, row in enumerate(df.itertuples(index=False)):
        cells = "".join(f'<td class="{cls}">{text}</td>' for text, cls in map(_cell, row))
        rows.append(f'<tr{" class=flagged" if flagged is not None and flagged.iloc[i] else ""}>{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def tables_page(tables: list[tuple[str, PathLike]], out: PathLike, title: str, note: str = "") -> Path:
    """A self-contained HTML page with the given CSV tables, each under its heading.

    The CSV stays the source (also as .md and .tex beside it); this page is only for reading."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    if note:
        parts.append(f"<p class='note'>{html.escape(note)}</p>")
    for heading, path in tables:
        try:
            df = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            df = pd.DataFrame()
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(f"<p class='note'>{html.escape(str(path))}: {len(df)} rows</p>")
        parts.append(table_html(df) if len(df.columns) else "<p>(empty)</p>")
    parts.append("</body></html>")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    return out


TABLE_HEADINGS = {
    "variability_summary": "Variability summary",
    "variability": "Coefficient of variation per configuration (cf. seed 001, Table 1)",
    "medians": "Medians per configuration",
    "models": "Performance models per region and metric (cf. seed 001, Tables 2-3)",
    "scaling": "Speed-up and efficiency",
    "overhead_fits": "Höfinger overhead model per group (seed 003)",
    "pop_metrics": "POP efficiency metrics (seed 004)",
    "models_summary": "Run-time models of all studies (cf. seed 001, Tables 2-3)",
}


def table_pages(inputs: Mapping[str, PathLike], outputs: Mapping[str, PathLike], pages: Mapping[str, list[str]],
                study: str | None = None) -> list[Path]:
    """Several table pages at once: ``pages`` maps an output name to the input names shown on it.

        table_pages({"medians": "medians.csv"}, {"measurements": "m.html"}, {"measurements": ["medians"]}, "nm")
    """
    written = []
    for page, names in pages.items():
        missing = [n for n in names if n not in inputs]
        if missing or page not in outputs:
            raise KeyError(f"table page {page!r}: no input {missing} or no output {page!r}")
        title = f"{study}: {page.replace('_', ' ')}" if study else page.replace("_", " ")
        written.append(tables_page([(TABLE_HEADINGS.get(n, n), inputs[n]) for n in names], outputs[page], title))
    return written


TABLE_PROBE = """
<script>
window.addEventListener('load', () => {
  const out = {};
  for (const [path, r] of Object.entries(results)) {
    if (!r.data_uri || !r.data_uri.startsWith('data:text/html')) continue;
    const bytes = Uint8Array.from(atob(r.data_uri.split('base64,')[1]), c => c.charCodeAt(0));
    const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), 'text/html');
    out[path] = Array.from(doc.querySelectorAll('table')).map(t => t.querySelectorAll('tbody tr').length);
  }
  const pre = document.createElement('pre');
  pre.id = 'perfsweep-tables';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def check_report_tables(report: PathLike) -> dict[str, list[int]]:
    """Every HTML page embedded in a Snakemake report, decoded and parsed by headless Chromium:
    {path: [rows of each table on the page]}. Raises if the report's data does not load in the browser.

        check_report_tables("results/report.html")   # {"results/report/nm/variability.html": [1, 25], ...}
    """
    import tempfile

    from perfsweep.report_check import dump_dom

    text = Path(report).read_text()
    with tempfile.TemporaryDirectory(prefix="perfsweep-report-") as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(text.replace("</body>", TABLE_PROBE + "</body>") if "</body>" in text else text + TABLE_PROBE)
        dom = dump_dom(probe)
    m = re.search(r'<pre id="perfsweep-tables">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("the report's script did not run in the browser (no table probe output in the DOM)")
    return json.loads(html.unescape(m.group(1)))


def report_categories(report: PathLike) -> dict[str, dict[str, list[str]]]:
    """How a Snakemake report groups its results: {category: {subcategory: [paths]}}.

        report_categories("results/report.html")["nm"]["variability"]   # ['.../variability.html', ...]
    """
    text = Path(report).read_text()
    marker = "var categories = "
    start = text.find(marker)
    if start < 0:
        raise ValueError(f"{report}: no 'var categories' in the file (not a Snakemake report?)")
    categories, _ = json.JSONDecoder().raw_decode(text[start + len(marker):])
    return categories
