"""Check a Snakemake HTML report in a real headless browser: does every figure and every page load?

    from perfsweep.report_check import probe_report, report_categories, unshown_figures
    probed = probe_report("results/report.html")   # one Chromium load of the report
    loaded = probed["images"]   # {"results/figures/x/grid.png": 1184, ...} (pixel widths)
    unshown_figures("results", loaded)   # [] if every figure (each model: on its study's sheet) is shown
    rows = probed["pages"]   # {"results/report/x/variability.html": [1, 25], ...}
    report_categories("results/report.html")["x"]["variability"]   # ['results/report/x/variability.html']

The report embeds each result as a data URI in its ``results`` object. We load the report page
unchanged plus one small script that, once the page has loaded, decodes every embedded image with the
browser's own image decoder (its natural width) and parses every embedded HTML page (the rows of each
of its tables), and writes both into the DOM, which Chromium dumps.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from perfsweep import layout

PROBE = """
<script>
window.addEventListener('load', async () => {
  const out = {images: {}, pages: {}};
  for (const [path, r] of Object.entries(results)) {
    if (!r.data_uri) continue;
    if (r.data_uri.startsWith('data:image')) {
      out.images[path] = await new Promise(res => {
        const im = new Image();
        im.onload = () => res(im.naturalWidth);
        im.onerror = () => res(0);
        im.src = r.data_uri;
      });
    } else if (r.data_uri.startsWith('data:text/html')) {
      const bytes = Uint8Array.from(atob(r.data_uri.split('base64,')[1]), c => c.charCodeAt(0));
      const doc = new DOMParser().parseFromString(new TextDecoder().decode(bytes), 'text/html');
      out.pages[path] = Array.from(doc.querySelectorAll('table')).map(t => t.querySelectorAll('tbody tr').length);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'perfsweep-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def dump_dom(page: str | os.PathLike[str], budget_ms: int = 20000) -> str:
    exe = chromium()
    if exe is None:
        raise RuntimeError("no Chromium found (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="perfsweep-chromium-") as profile:
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={budget_ms}", "--dump-dom", Path(page).resolve().as_uri()],
                              capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed: {proc.stderr[-1000:]}")
    return proc.stdout


def probe_report(report: str | os.PathLike[str]) -> dict[str, dict]:
    """What Chromium made of the report's embedded results: {"images": {path: natural width, 0 = did
    not decode}, "pages": {path: [rows of each table on the page]}}. Raises if the report's data does
    not load in the browser."""
    text = Path(report).read_text()
    with tempfile.TemporaryDirectory(prefix="perfsweep-report-") as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(text.replace("</body>", PROBE + "</body>") if "</body>" in text else text + PROBE)
        dom = dump_dom(probe)
    m = re.search(r'<pre id="perfsweep-probe">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("the report's script did not run in the browser (no probe output in the DOM)")
    return json.loads(html.unescape(m.group(1)))


def unshown_figures(results: str | os.PathLike[str], loaded: dict[str, int]) -> list[str]:
    """The figures under ``results`` that a report does not show, given what :func:`probe_report` decoded
    (``loaded``). Every PNG must be in the report and decode, except each model's full-size figures
    (``figures/<study>/models/``): the study's sheet of every model must, and must list the model.

        assert unshown_figures("results", probe_report("results/report.html")["images"]) == []
    """
    unshown = []
    for png in sorted(Path(results).rglob("*.png")):
        study = png.parent.parent.name
        if png.parent == Path(layout.output(results, "model_figures", "figures", study)):
            sheet = Path(layout.output(results, "model_sheet", "sheet", study))
            index = layout.figure_data(sheet)
            listed = {row["figure"] for row in csv.DictReader(index.open())} if index.exists() else set()
            shown = loaded.get(str(sheet), 0) > 0 and png.name.replace("__vs_measurement", "") in listed
        else:
            shown = loaded.get(str(png), 0) > 0
        if not shown:
            unshown.append(str(png))
    return unshown


def report_categories(report: str | os.PathLike[str]) -> dict[str, dict[str, list[str]]]:
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
