"""Line coverage of src/perfsweep per module, as the test suite reaches it: the tests themselves and every
Python process they start (Snakemake, its ``script:`` jobs, the runner, MPI ranks: coverage.py's
``patch = subprocess``; and a forked child's lines, saved at its ``os._exit``: ``patch = fork, _exit``), measured in
a fresh clone of one commit with a venv of its own.

    .venv/bin/python bench/coverage.py --commit HEAD --out bench/results/coverage/<commit>.txt
    .venv/bin/python bench/coverage.py --compare bench/results/coverage/A.txt bench/results/coverage/B.txt

The first writes a table (module, statements, missed, line coverage) for the commit's suite (the README's
test command's pytest; PERFSWEEP_TEST_SLURM passed on as set); ``-- ARGS`` after the options are given to
pytest instead (e.g. ``-- tests/test_config.py`` for a quick look). The second prints every module whose
coverage is lower in B than in A, and exits 1 if there is any (issue "A suite that lands": nowhere lower)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(commit: str, pytest_args: list[str], keep: Path | None = None) -> tuple[str, dict[str, tuple[int, int]]]:
    """(the commit's full hash, {module: (statements, missed)}) of the suite run in a fresh clone;
    ``keep``: where to copy coverage.py's JSON report (every missed line, per file)."""
    with tempfile.TemporaryDirectory(prefix="perfsweep-coverage-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", commit], check=True)
        full = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        subprocess.run(["make", "setup"], cwd=clone, check=True)
        python = clone / ".venv" / "bin" / "python"
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "coverage>=7.17"], check=True)
        rc = Path(tmp) / "coveragerc"
        rc.write_text(f"[run]\nsource = {clone / 'src' / 'perfsweep'}\nparallel = true\n"
                      "patch =\n    subprocess\n    fork\n    _exit\n"
                      f"data_file = {Path(tmp) / '.coverage'}\n")
        run = subprocess.run([str(python), "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q",
                              "-p", "no:cacheprovider", *pytest_args], cwd=clone)
        print(f"coverage.py: pytest exit {run.returncode}", flush=True)
        subprocess.run([str(python), "-m", "coverage", "combine", f"--rcfile={rc}", "--quiet"], cwd=clone, check=True)
        out = Path(tmp) / "coverage.json"
        subprocess.run([str(python), "-m", "coverage", "json", f"--rcfile={rc}", "-o", str(out), "--quiet"],
                       cwd=clone, check=True)
        if keep:
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_text(out.read_text())
        files = json.loads(out.read_text())["files"]
        root = clone / "src"
        table = {}
        for path, data in files.items():
            module = ".".join((clone / path).resolve().relative_to(root.resolve()).with_suffix("").parts)  # (relative: to the clone)
            s = data["summary"]
            table[module.removesuffix(".__init__")] = (s["num_statements"], s["missing_lines"])
        return full, table


def write_table(commit: str, table: dict[str, tuple[int, int]], args: list[str]) -> str:
    lines = [f"# line coverage of src/perfsweep per module, commit {commit}, pytest {' '.join(args) or '(the suite)'}",
             f"# PERFSWEEP_TEST_SLURM={os.environ.get('PERFSWEEP_TEST_SLURM', '')}",
             f"{'module':<48} {'statements':>10} {'missed':>7} {'cover':>7}"]
    total_s = total_m = 0
    for module in sorted(table):
        s, m = table[module]
        total_s, total_m = total_s + s, total_m + m
        lines.append(f"{module:<48} {s:>10} {m:>7} {cover(s, m):>6.1f}%")
    lines.append(f"{'TOTAL':<48} {total_s:>10} {total_m:>7} {cover(total_s, total_m):>6.1f}%")
    return "\n".join(lines) + "\n"


def cover(statements: int, missed: int) -> float:
    return 100.0 * (statements - missed) / statements if statements else 100.0


def read_table(path: Path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if line.startswith("#") or len(parts) != 4 or parts[0] in ("module", "TOTAL"):
            continue
        out[parts[0]] = float(parts[3].rstrip("%"))
    return out


def compare(before: Path, after: Path) -> int:
    a, b = read_table(before), read_table(after)
    lower = [(m, a[m], b.get(m, 0.0)) for m in sorted(a) if b.get(m, 0.0) < a[m] - 1e-9]
    for module, x, y in lower:
        print(f"{module}: {x:.1f}% -> {y:.1f}%")
    print(f"{len(lower)} of {len(a)} modules lower in {after} than in {before}")
    return 1 if lower else 0


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out", help="the table's file (printed as well)")
    ap.add_argument("--json", type=Path, help="also keep coverage.py's JSON report (the missed lines) there")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two tables: modules lower in AFTER")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]))
    commit, table = measure(args.commit, extra, args.json)
    text = write_table(commit, table, extra)
    print(text, end="")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
