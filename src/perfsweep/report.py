"""The study's tables as HTML pages for the Snakemake report (it embeds HTML, but offers a CSV only
as a download); the report's model figures are in :mod:`perfsweep.plots.models`, its check in a
browser in :mod:`perfsweep.report_check`.

Usage (what workflow/rules/report.smk's page rules call through perfsweep.stages.report_pages and its siblings)::

    from perfsweep import report
    report.pages({"medians": "results/tables/nm/medians.csv"}, {"measurements": "measurements.html"},
                 {"measurements": ["medians"]}, study="nm")   # one page per output, its tables on it
    report.tables_page([("Variability", "results/tables/nm/variability.csv")], "variability.html",
                       title="nm: variability")
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from perfsweep.values import PathLike


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
    """One DataFrame as an HTML table; rows with a true 'flagged' (or 'disturbed') column are shaded."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    mark = "flagged" if "flagged" in df.columns else "disturbed" if "disturbed" in df.columns else None
    flagged = df[mark].astype(str).str.lower().eq("true") if mark else None
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
    "validation": "Validation points (measured, never fitted): predicted against measured, the model's 90 % "
                  "interval and whether it covered the measurement",
    "scaling": "Speed-up and efficiency",
    "overhead_fits": "Höfinger overhead model per group (seed 003)",
    "pop_metrics": "POP efficiency metrics (seed 004)",
    "models_summary": "Run-time models of all studies (cf. seed 001, Tables 2-3)",
    "runs": "Every run, its status and error",
    "run_order": "The runs in the order they ran: each repetition round in the random order of the config's "
                 "seed; what the host did during each (others' busy share of its cores, its CPU/wall ratio, "
                 "involuntary context switches); shaded: disturbed (others took more than variability.disturbed of the cores "
                 "the run needed)",
}


def pages(inputs: Mapping[str, PathLike], outputs: Mapping[str, PathLike], layout: Mapping[str, list[str]],
          study: str | None = None) -> list[Path]:
    """The report's table pages: ``layout`` maps an output name to the input names shown on it.

        pages({"medians": "medians.csv"}, {"measurements": "m.html"}, {"measurements": ["medians"]}, "nm")
    """
    written = []
    for page, names in layout.items():
        missing = [n for n in names if n not in inputs]
        if missing or page not in outputs:
            raise KeyError(f"table page {page!r}: no input {missing} or no output {page!r}")
        title = f"{study}: {page.replace('_', ' ')}" if study else page.replace("_", " ")
        written.append(tables_page([(TABLE_HEADINGS.get(n, n), inputs[n]) for n in names], outputs[page], title))
    return written


def zip_report_requested(argv: list[str]) -> bool:
    """Whether this Snakemake was asked for a report as a .zip archive (``--report report.zip``): then the
    report also carries every model's full-size figure, not only the study's sheet of all models
    (an HTML report embeds every figure and is meant to stay small enough to send)."""
    try:
        from snakemake.cli import get_argument_parser  # heavy: only the workflow's main process asks

        args, _ = get_argument_parser().parse_known_args(argv)
        return str(getattr(args, "report", None) or "").endswith(".zip")
    except (Exception, SystemExit):
        return any(cur.endswith(".zip") and (prev == "--report" or cur.startswith("--report="))
                   for prev, cur in zip(["", *argv], argv))


def zip_report_unready(argv: list[str], figure_dirs: list[str]) -> str | None:
    """What to do first if a zip report (``--report x.zip``) is asked for without a run while some of
    ``figure_dirs`` (each model's figures, figures/<study>/models/, drawn only for a zip report) are
    missing: one line naming the command that draws them; None if nothing is missing or the report
    comes after a run (``--report-after-run``, which draws what is missing first)."""
    missing = [d for d in figure_dirs if not os.path.isdir(d)]
    if not missing or not zip_report_requested(argv) or "--report-after-run" in argv:
        return None
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return (f"a zip report carries each model's figures, not drawn yet ({missing[0]}{more}): "
            "add --report-after-run (and --cores N) to draw them and then write the report")
