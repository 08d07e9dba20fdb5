"""Check a Snakemake HTML report in a real headless browser: does every figure load?

    from perfsweep.report_check import check_report
    loaded = check_report("results/report.html")   # {"results/figures/x/grid.png": 1184, ...} (pixel widths)

The report embeds each figure as a data URI in its ``results`` object. We load the report page
unchanged plus one small script that, once the page has loaded, decodes every embedded image with the
browser's own image decoder and writes the natural widths into the DOM, which Chromium dumps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

PROBE = """
<script>
window.addEventListener('load', async () => {
  const out = {};
  for (const [path, r] of Object.entries(results)) {
    if (!r.data_uri || !r.data_uri.startsWith('data:image')) continue;
    out[path] = await new Promise(res => {
      const im = new Image();
      im.onload = () => res(im.naturalWidth);
      im.onerror = () => res(0);
      im.src = r.data_uri;
    });
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


def dump_dom(html: str | os.PathLike[str], budget_ms: int = 20000) -> str:
    exe = chromium()
    if exe is None:
        raise RuntimeError("no Chromium found (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="perfsweep-chromium-") as profile:
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={budget_ms}", "--dump-dom", Path(html).resolve().as_uri()],
                              capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed: {proc.stderr[-1000:]}")
    return proc.stdout


def check_report(report: str | os.PathLike[str]) -> dict[str, int]:
    """Natural width of every embedded figure as decoded by Chromium (0 = did not load)."""
    html = Path(report).read_text()
    with tempfile.TemporaryDirectory(prefix="perfsweep-report-") as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(html.replace("</body>", PROBE + "</body>") if "</body>" in html else html + PROBE)
        dom = dump_dom(probe)
    m = re.search(r'<pre id="perfsweep-probe">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("the report's script did not run in the browser (no probe output in the DOM)")
    return json.loads(m.group(1).replace("&quot;", '"'))
