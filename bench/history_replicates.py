"""Every replicate tree that bench/results keeps, recorded into a history store, and the store's trends.

    .venv/bin/python bench/history_replicates.py > bench/results/history_replicates.txt

Each sweep of each ``bench/results/replicates/<commit>-<quiet|busy>/sweep<k>`` (its gzipped models.json and
aggregate tables; no run records were kept) is unpacked into a results tree and recorded with
``perfsweep history add`` (labels host=quiet|busy, app version = the commit), in the order of the
commits' dates (git log; a commit not in this history, f15083a, after the others of its day), then
``perfsweep history list`` and ``perfsweep history trend --format md`` print. Issue 56 asks that every kept
tree records without error and that its trend table prints. Computed from committed files: run again at
the same commit it prints the same figures but for the recording times."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))
TREES = REPO / "bench" / "results" / "replicates"


def commit_date(commit: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), "show", "-s", "--format=%cI", commit], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "9999"


def unpack(sweep: Path, into: Path) -> Path:
    """A results tree of the sweep's models and aggregates (gunzipped)."""
    for packed in sorted(sweep.glob("*/*/*.gz")):
        if packed.parts[-3] not in ("models", "tables"):
            continue
        target = into / packed.relative_to(sweep).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(packed, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return into


def main() -> int:
    trees = sorted(TREES.iterdir(), key=lambda d: (commit_date(d.name.split("-")[0]), d.name))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="perfsweep-history-bench-") as tmp:
        store = Path(tmp) / "h.sqlite"
        for tree in trees:
            commit, host = tree.name.split("-")
            for sweep in sorted(tree.glob("sweep*")):
                results = unpack(sweep, Path(tmp) / tree.name / sweep.name)
                proc = subprocess.run([PERFSWEEP, "history", "add", str(results), "--store", str(store),
                                       "--app-version", commit, "--label", f"host={host}"],
                                      capture_output=True, text=True)
                said = (proc.stdout + proc.stderr).strip().replace(tmp, "TMP")
                print(f"# {tree.name}/{sweep.name}: exit {proc.returncode}: {said}")
                failed += proc.returncode != 0
        listed = subprocess.run([PERFSWEEP, "history", "list", "--store", str(store), "--format", "md"],
                                capture_output=True, text=True)
        trend = subprocess.run([PERFSWEEP, "history", "trend", "--store", str(store), "--format", "md"],
                               capture_output=True, text=True)
        print(f"\n## perfsweep history list (exit {listed.returncode})\n")
        print(listed.stdout.replace(tmp, "TMP"), listed.stderr)
        print(f"\n## perfsweep history trend --format md (exit {trend.returncode})\n")
        print(trend.stdout.replace(tmp, "TMP"), trend.stderr)
    print(f"# {failed} recordings failed")
    return 1 if failed or listed.returncode or trend.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
