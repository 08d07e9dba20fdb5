"""``perfsweep compare A B --html`` of 10,000 call paths (issue 43: at most 30 s on this machine, timed beside
``perfsweep predict`` of one model in the same run; issue 36: 1,000 call paths in at most 10 s).

    .venv/bin/python bench/compare_scale.py [--paths 10000] [--resamples 40] [--repeats 3]

Two results directories, each with one study T(n, p) of ``--paths`` call paths (region/metric "time"),
their models as the pipeline writes them (models.json with 40 resampled models per call path, from
fits of noisy synthetic measurements on a 5 x 4 grid, their coefficients varied per call path; B has
a tenth of the paths 20 % slower and one in fifty growing faster in n). Prints, in the same run, each
command a new process of the CLI (Python's start-up and imports included), ``--repeats`` times
interleaved (the host is shared: each round's figures, then the median of the rounds):

- the baseline: ``perfsweep predict`` of one model of A's file (the command's fixed cost: Python, numpy,
  pandas, scipy, one models.json read and checked);
- ``perfsweep compare A B --format json`` (import, loading, checking, matching, the ratios from 2 x 40
  resampled models per path, the lead orders and the resamples' support, Holm, the table);
- ``perfsweep compare A B --html page.html`` (the table as text, and the page: the table and the
  figures of the first 40 rows);

and their ratios to the baseline. The first line names the commit measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

PERFSWEEP = str(Path(sys.executable).with_name("perfsweep"))
ROOT = Path(__file__).resolve().parent.parent


def base_models(resamples: int, seed: int = 0) -> list[dict]:
    """A few fitted models of T(n, p) (as the pipeline fits them) to vary per call path."""
    from perfsweep.modeling.fit import fit_model
    from perfsweep.modeling.pipeline import fit_options

    rng = np.random.default_rng(seed)
    n, p = np.meshgrid([400, 800, 1200, 1600, 2000], [1, 2, 4, 8])
    x = np.column_stack([n.ravel(), p.ravel()]).astype(float)
    laws = [lambda x: 1e-3 * x[:, 0] / x[:, 1] + 0.05, lambda x: 2e-4 * x[:, 0] * np.log2(x[:, 0]) / x[:, 1] + 0.1,
            lambda x: 1e-6 * x[:, 0] ** 2 / x[:, 1] + 0.02 * np.log2(x[:, 1]) + 0.1, lambda x: 0.3 + 1e-4 * x[:, 0]]
    out = []
    options = fit_options("p", "full", resamples, x, ["n", "p"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for law in laws:
            y = law(x)[:, None] * np.exp(rng.normal(0, 0.05, (len(x), 3)))
            out.append(fit_model(x, y, ["n", "p"], options=options).to_dict())
    return out


def write_side(root: Path, models: list[dict], paths: int, slower: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    entries = []
    for k in range(paths):
        model = json.loads(json.dumps(models[k % len(models)]))
        scale = float(np.exp(rng.normal(0, 0.5)))
        if slower and k % 10 == 0:
            scale *= 1.2
        for m in [model, *model["bootstrap"]]:
            m["coefficients"] = [c * scale for c in m["coefficients"]]
        if slower and k % 50 == 1:  # a faster-growing model (another call path's form: n^2)
            model = json.loads(json.dumps(models[2]))
        entries.append({"study": "T_n_p", "region": f"main/solver/kernel_{k:04d}", "metric": "time", "fixed": {},
                        "processes": "p", "level": 0.9, "notes": [], "model": model})
    (root / "models" / "T_n_p").mkdir(parents=True)
    (root / "models" / "T_n_p" / "models.json").write_text(json.dumps(entries))


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout.strip()


def measured_commit() -> str:
    """The commit of this checkout, and whether its tree differs from it."""
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src", "bench")
    return (git("rev-parse", "--short=12", "HEAD") or "unknown") + (" with uncommitted changes" if dirty else "")


def cli(rev_src: Path | None) -> tuple[list[str], dict | None]:
    """The command line of perfsweep: this checkout's, or (``rev_src``) another revision's source tree's."""
    if rev_src is None:
        return [PERFSWEEP], None
    return ([sys.executable, "-c", "import sys; from perfsweep.cli import main; sys.exit(main())"],
            {**os.environ, "PYTHONPATH": str(rev_src)})


def round_of(a: Path, b: Path, tmp: Path, rev_src: Path | None) -> tuple[dict[str, float], str, int]:
    """predict, compare and compare --html, one after the other: their times, compare's JSON, the page's figures."""
    cmd, env = cli(rev_src)
    base, proc = timed([*cmd, "predict", str(a / "models" / "T_n_p" / "models.json"), "n=1000", "p=4",
                        "--region", "main/solver/kernel_0000"], env)
    assert proc.returncode == 0, proc.stderr
    took, proc = timed([*cmd, "compare", str(a), str(b), "--format", "json", "--min-share", "0"], env)
    assert proc.returncode in (0, 1), proc.stderr
    page = tmp / "page.html"
    drawn, proc_html = timed([*cmd, "compare", str(a), str(b), "--min-share", "0", "--html", str(page)], env)
    assert proc_html.returncode in (0, 1), proc_html.stderr
    return {"predict": base, "compare": took, "html": drawn}, proc.stdout, page.read_text().count("<img")


def report(label: str, times: dict[str, list[float]], figures: int) -> None:
    base, took, drawn = (float(np.median(times[k])) for k in ("predict", "compare", "html"))
    print(f"{label}, median of {len(times['predict'])} rounds:")
    print(f"  baseline perfsweep predict (1 model): {base:6.2f} s")
    print(f"  perfsweep compare A B:                {took:6.2f} s   compare / baseline = {took / base:.1f}x")
    print(f"  ... --html ({figures} figures):{' ' * (16 - len(str(figures)))}{drawn:6.2f} s   compare --html / "
          f"baseline = {drawn / base:.1f}x   (target <= 30 s at 10,000 paths)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", type=int, default=10000)
    ap.add_argument("--resamples", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3, help="rounds of the three commands, interleaved")
    ap.add_argument("--against", metavar="REV", help="also time another revision's perfsweep (its src/ from git) "
                                                     "in each round, and check that its --format json is the same")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}: bench/compare_scale.py --paths {args.paths} --resamples "
          f"{args.resamples} --repeats {args.repeats}{' --against ' + args.against if args.against else ''}; "
          f"commit {measured_commit()}; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())} at the start", flush=True)
    models = base_models(args.resamples)
    with tempfile.TemporaryDirectory(prefix="compare-scale-") as tmp_name:
        tmp = Path(tmp_name)
        a, b = tmp / "a", tmp / "b"
        write_side(a, models, args.paths, False, 1)
        write_side(b, models, args.paths, True, 1)
        size = (a / "models" / "T_n_p" / "models.json").stat().st_size
        print(f"compare of {args.paths} call paths x 2 sweeps ({args.resamples} resamples each; models.json "
              f"{size / 1e6:.1f} MB per side); each command a new process")
        revs: dict[str, Path | None] = {"this checkout": None}
        if args.against:
            archive = subprocess.run(["git", "archive", args.against, "src"], capture_output=True, cwd=ROOT, check=True)
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
            revs = {f"{args.against} ({git('rev-parse', '--short=12', args.against)})": tmp / "src", **revs}
        times = {rev: {"predict": [], "compare": [], "html": []} for rev in revs}
        outputs: dict[str, str] = {}
        for k in range(args.repeats):
            for rev, src in revs.items():
                took, outputs[rev], figures = round_of(a, b, tmp, src)
                for key, value in took.items():
                    times[rev][key].append(value)
                print(f"  round {k + 1}, {rev}: predict {took['predict']:6.2f} s   compare {took['compare']:6.2f} s "
                      f"({took['compare'] / took['predict']:.1f}x)   compare --html {took['html']:6.2f} s "
                      f"({took['html'] / took['predict']:.1f}x), load average {os.getloadavg()[0]:.1f}", flush=True)
    for rev in revs:
        report(rev, times[rev], figures)
    if args.against:
        print(f"--format json of both revisions: {'the same bytes' if len(set(outputs.values())) == 1 else 'DIFFERENT'}")
    data = json.loads(outputs["this checkout"])
    print(f"verdicts (exit {data['exit_code']}): {', '.join(f'{k} {v}' for k, v in data['counts'].items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
