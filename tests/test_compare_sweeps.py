"""``perfsweep compare A B`` (issue 36): real sweeps of the built-in ljmd (real Snakemake, real MPI ranks)
with and without a known change, two Extra-P inputs, the statistics on synthetic models, and bad input.

The sweeps are tiny (one study T(n), 5 sizes, 5 repetitions of 150 steps: tens of seconds each; two tests
measure more where the gate cannot resolve their change, up to 20 repetitions: ``measure_more``). Each
"after" sweep runs at the same time as its own "before" (``perfsweep run --cores 1`` each, from its
own directory): on this shared 2-core host the load of the other work changes by 2-3x within minutes,
and sweeps run one after the other then differ by what the host did in between (two replicate sweeps
minutes apart differed by 29 % in compute time); run side by side, both see the same host. A 20 %
slowdown still needs runs whose noise is not far above it: with single runs varying by 30 % the test
below saw an interval of [0.71, 1.97] once.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO

PERFSWEEP = Path(sys.executable).with_name("perfsweep")
EXTRAP = REPO / "tests" / "data" / "extrap"

TINY = {
    "app": {"name": "ljmd", "args": {"steps": 150}},
    "launcher": "{mpiexec} -n {p}",
    "parameters": {"n": 400, "m": 1, "d": 0.5, "c": 2.0, "p": 1},
    "repetitions": 5,
    "timeout": 300,
    "studies": {"T_n": {"vary": {"n": [400, 600, 800, 1000, 1200]}, "fixed": {"m": 1, "d": 0.5, "c": 2.0, "p": 1}}},
}


def tiny_config(path: Path, results: Path, **change) -> Path:
    cfg = json.loads(json.dumps(TINY))
    cfg["app"]["args"].update(change)
    cfg["results"] = str(results)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def sweep_pair(root: Path, name: str, together: bool = True, **change) -> tuple[Path, Path]:
    """A "before" sweep and an "after" sweep (with the app's ``change``) run side by side (the host's
    drift the same for both), or one after the other (``together=False``: where the change loads the
    host in a way that grows with n, the side-by-side "before" grows with it); their results."""
    works = []
    for side, args in (("before", {}), ("after", change)):
        work = root / name / side
        work.mkdir(parents=True)
        tiny_config(work / "c.yaml", work / "results", **args)
        works.append(work)
    run_sides(works, together)
    return works[0] / "results", works[1] / "results"


def run_sides(works: list[Path], together: bool) -> None:
    """``perfsweep run`` of each side's config (``--cores 1``), side by side or one after the other."""
    procs = []
    for work in works:
        log = open(work / "log", "a")
        procs.append((subprocess.Popen([str(PERFSWEEP), "run", str(work / "c.yaml"), "--cores", "1", "--no-report"],
                                       cwd=work, stdout=log, stderr=subprocess.STDOUT), work))
        if not together:
            assert procs[-1][0].wait(timeout=1200) == 0, (work / "log").read_text()[-3000:]
    for proc, work in procs:
        assert proc.wait(timeout=1200) == 0, (work / "log").read_text()[-3000:]


def measure_more(a: Path, b: Path, repetitions: int, together: bool = True) -> None:
    """Both sweeps of a pair given ``repetitions`` in all, as a user does where the gate says the
    repetitions cannot resolve a change: ``perfsweep run`` again runs only the new ones."""
    works = [a.parent, b.parent]
    for work in works:
        cfg = yaml.safe_load((work / "c.yaml").read_text())
        cfg["repetitions"] = repetitions
        (work / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run_sides(works, together)


def compare(a, b, *more, cwd=None):
    return subprocess.run([str(PERFSWEEP), "compare", str(a), str(b), *map(str, more)], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def rows(a, b, *more) -> tuple[int, dict]:
    proc = compare(a, b, "--format", "json", *more)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == proc.returncode
    return proc.returncode, {(r["region"], r["metric"]): r for r in data["rows"]}


# regions of ljmd that do not contain the forces (those that do: all, step, all/compute)
NOT_FORCES = [("step/neighbours", "time"), ("step/integrate", "time"), ("step/output", "time"), ("setup", "time"),
              ("all", "init"), ("all", "io"), ("all", "comm")]


@pytest.mark.slow
def test_replicate_sweeps_no_change(tmp_path):
    """Two sweeps of the same config: every gating row 'no significant change' or 'inconclusive', exit 0."""
    a, b = sweep_pair(tmp_path, "replicate")
    code, table = rows(a, b)
    gating = {k: r for k, r in table.items() if r["gated"]}
    assert gating and all(r["verdict"] in ("no significant change", "inconclusive") for r in gating.values()), gating
    assert not any(r["gated"] and r["scaling"] == "worse" for r in table.values())
    assert code == 0
    text = compare(a, b)
    assert text.returncode == 0 and "no gated regression (exit 0)" in text.stdout


@pytest.mark.slow
def test_one_region_slowed_20_percent_is_that_regions_regression(tmp_path):
    """The force region 20 % slower: that region a regression, exit 1, no other gating region one.
    Measured as a user does where the gate says it cannot resolve the change: the repetitions doubled
    (to 10, then 20) while the region's minimum detectable effect is above 10 %. With 5 repetitions, on
    a host whose single runs spread by 10-20 % (CV), the region's was 18-25 %, and the CI run of
    9de1a5d saw it inconclusive (Holm's correction over the 10 gating tests wants about twice the
    change's distance from the 5 % band in standard errors). The ratio may reach 1.45: slowed by sleeps
    of 0.2x its own time, the region's medians came out 1.25-1.37x the "before" sweep's here (its own
    compute after a sleep runs slower; the neighbour search after it about 7 % slower too), and 1.352
    once failed the former bound of 1.35. Rows below --min-share are not asserted:
    regions of a few ms (all/comm, 4 ms at n = 1200) differ between two sweeps by up to 50 %, which the
    repetitions of either sweep do not show."""
    a, b = sweep_pair(tmp_path, "slow", **{"slow-region": "forces=1.2"})
    code, table = rows(a, b)
    for repetitions in (10, 20):
        if table["step/forces", "time"]["mde"] <= 0.1:
            break
        measure_more(a, b, repetitions)
        code, table = rows(a, b)
    forces = table["step/forces", "time"]
    assert forces["verdict"] == "regression", forces
    assert 1.1 < forces["ratio"] < 1.45 and forces["low"] > 1.0, forces
    assert code == 1
    for key in NOT_FORCES:
        assert not table[key]["gated"] or table[key]["verdict"] != "regression", table[key]


@pytest.mark.slow
def test_a_whole_program_20_percent_slower_is_a_regression(tmp_path):
    """Every step more work (steps: 180 instead of 150), in two sweeps: the whole run is never "no
    significant change" or an improvement; where the sweeps resolve 10 % (the whole run's minimum
    detectable effect, at 80 % power, at most half the change) it is a regression, exit 1 (the median of
    the rows no longer divides it out); where the host is too loaded to resolve 20 % (under a load of 6
    on 2 cores: an mde of 26 %, ratio 1.15 [1.00, 1.32]), the summary names it among the rows that cannot
    resolve the threshold. (With an mde just under 20 %, a 20 % change is caught 4 times in 5: CI once saw
    it inconclusive. tests/test_paired.py measures the two versions in one sweep, and catches it there.) Never an "improvement" of the regions
    that did not change (setup), and the app's changed argument is listed at the top. (Exit 1 on every
    row 1.2x, whatever the noise: tests/test_compare_gate.py's synthetic sweeps.)"""
    a, b = sweep_pair(tmp_path, "whole", steps=180)
    code, table = rows(a, b)
    whole = table["all", "time"]
    assert whole["ratio"] > 1.08 and whole["verdict"] in ("regression", "inconclusive"), whole
    if whole["verdict"] == "regression":
        assert code == 1
    if whole["mde"] <= 0.1:  # a change of twice the mde: caught with a power above 99 %
        assert whole["verdict"] == "regression", whole
    elif whole["mde"] > 0.2:  # (an mde of 10-20 %: caught or not; 80 % power at 20 %)
        data = json.loads(compare(a, b, "--format", "json").stdout)  # (another row may still be caught: exit 1)
        assert "T_n/all/time" in data["unresolved"], data["unresolved"]
    assert table["setup", "time"]["verdict"] != "improvement"
    text = compare(a, b).stdout
    assert "# setting differs: study T_n: app command of " in text and "150 (A) -> 180 (B)" in text, text[:2000]
    assert "one baseline: whole-sweep drift is unknown" in text


@pytest.mark.slow
def test_a_two_percent_change_is_no_regression(tmp_path):
    a, b = sweep_pair(tmp_path, "slight", **{"slow-region": "forces=1.02"})
    code, table = rows(a, b)
    assert table["step/forces", "time"]["verdict"] != "regression"
    assert not any(r["verdict"] == "regression" for r in table.values() if r["gated"])
    assert code == 0


# the rows whose class the extra n^2 pass in the force region makes worse
GROWN = [("step/forces", "time"), ("step", "time"), ("all", "time"), ("all", "compute")]


@pytest.mark.slow
def test_a_faster_growing_term_is_a_worse_scaling_class(tmp_path):
    """An extra all-pairs pass (n^2 / p) in the force region: the region's or the total's scaling class
    confidently worse, a regression, exit 1; the page draws it. In the force region, whose own time
    grows smoothly like n: the neighbour search's grows in steps (how many times the Verlet list is
    rebuilt changes with n), and a "before" sweep's neighbour region was modelled n^2 once, as the
    pass made the "after" one (class "same"). The sweeps run one after the other: side by side, the
    "before" sweep shares the host with the pass, which grows with n. Measured as a user does where
    the gate calls the class uncertain: the repetitions doubled (to 10, then 20) until a row's class is
    worse. With 5 repetitions and single runs spread by 15-20 % (CV) the "before" sweep's total was
    modelled n^(3/2) here and n^(4/3) in the CI run of 9de1a5d, and the class stayed uncertain in both;
    here it took 20 repetitions (the force region worse, n^(3/4) log -> n^(3/2) log)."""
    a, b = sweep_pair(tmp_path, "pairs", together=False, **{"all-pairs": "forces"})
    code, table = rows(a, b)
    for repetitions in (10, 20):
        grown = [k for k in GROWN if table[k]["scaling"] == "worse"]
        if grown:
            break
        measure_more(a, b, repetitions, together=False)
        code, table = rows(a, b)
    assert code == 1
    grown = [k for k in GROWN if table[k]["scaling"] == "worse"]
    assert grown, {k: (r["scaling"], r["orders_a"], r["orders_b"]) for k, r in table.items()}
    for k in grown:  # B's lead order in n grows faster
        assert table[k]["orders_a"] != table[k]["orders_b"]
    assert table["step/forces", "time"]["verdict"] == "regression"
    assert table["step/neighbours", "time"]["verdict"] != "regression"
    page = tmp_path / "page.html"
    proc = compare(a, b, "--html", page)
    assert proc.returncode == 1
    html = page.read_text()
    assert "worse" in html and html.count("<img") == len(table) and "http" not in html.replace("http-equiv", "")


def test_two_extrap_inputs_compared_with_the_same_table():
    """Extra-P's own test data: two inputs of the same parameters; a renamed pair with --param-map;
    what one side has alone is listed."""
    a, b = EXTRAP / "json" / "input_6.JSON", EXTRAP / "json" / "input_7.JSON"
    proc = compare(a, b)
    assert proc.returncode == 0, proc.stderr
    assert f"only in A ({a}): input: region/metric sweep/flops" in proc.stdout
    assert f"only in B ({b}): input: region/metric solve/time" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if not line.startswith("#")).split()
    assert header[:5] == ["verdict", "study", "region", "metric", "ratio"]
    code, table = rows(a, b)
    assert list(table) == [("sweep", "time")] and table["sweep", "time"]["scaling"] == "same"
    assert table["sweep", "time"]["ratio"] == pytest.approx(1.0, abs=1e-6)

    a, b = EXTRAP / "jsonlines" / "test1.jsonl", EXTRAP / "jsonlines" / "test2.jsonl"
    bad = compare(a, b)  # x, y against p, n: no silent guess
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--param-map" in bad.stderr
    assert f"{b}: study input: parameters p, n do not match {a}'s x, y" in bad.stderr
    code, table = rows(a, b, "--param-map", "x=p", "--param-map", "y=n")
    row = table["<root>", "metr"]
    assert row["target"] == "p=5, n=5" and row["ratio"] > 1


def test_results_directory_and_extrap_rows_have_the_same_columns(tmp_path):
    from perfsweep.compare import judge, load, render

    side = load.load_side(EXTRAP / "json" / "input_6.JSON")
    result = judge.compare(side, load.load_side(EXTRAP / "json" / "input_6.JSON"))
    assert list(render.display_table(result).columns) == render.COLUMNS
    assert all(r.verdict == "no significant change" for r in result.rows)


# --- the statistics on synthetic sweeps (no MPI): a known ratio, noise like this host's ------------------------


def synthetic_side(tmp_path: Path, name: str, factors: dict[str, float], noise: float = 0.04, seed: int = 0,
                   grow: dict[str, float] | None = None) -> Path:
    """A results directory with one study of n: regions r0..r5 (time c_k * n, region 'all' their sum),
    each multiplied by ``factors`` and with log-normal noise of ``noise`` per repetition (5 repetitions)."""
    from perfsweep.modeling.pipeline import fit_study_models

    rng = np.random.default_rng(seed)
    n = np.array([400, 600, 800, 1000, 1200, 1400], float)
    rows_ = []
    regions = {f"r{k}": (k + 1) * 1e-5 for k in range(6)}
    totals = np.zeros((len(n), 5))
    for region, c in regions.items():
        exponent = (grow or {}).get(region, 1.0)
        y = c * n[:, None] ** exponent * factors.get(region, 1.0) * np.exp(rng.normal(0, noise, (len(n), 5)))
        totals += y
        rows_ += [{"config_id": f"n={int(v)}", "n": v, "region": region, "metric": "time", "median": float(np.median(r)),
                   "values": " ".join(repr(float(v)) for v in r)} for v, r in zip(n, y)]
    rows_ += [{"config_id": f"n={int(v)}", "n": v, "region": "all", "metric": "time", "median": float(np.median(r)),
               "values": " ".join(repr(float(v)) for v in r)} for v, r in zip(n, totals)]
    import pandas as pd

    agg = pd.DataFrame(rows_)
    _, models, _ = fit_study_models(agg, "S", ["n"], {}, bootstrap=40)
    root = tmp_path / name
    (root / "models" / "S").mkdir(parents=True)
    (root / "tables" / "S").mkdir(parents=True)
    (root / "models" / "S" / "models.json").write_text(json.dumps(models))
    agg.to_csv(root / "tables" / "S" / "aggregate.csv", index=False)
    return root


def test_synthetic_regression_found_and_two_percent_not(tmp_path):
    from perfsweep.compare import judge, load, render

    before = synthetic_side(tmp_path, "before", {}, seed=1)
    same = synthetic_side(tmp_path, "same", {}, seed=2)
    slow = synthetic_side(tmp_path, "slow", {"r5": 1.2}, seed=3)
    slight = synthetic_side(tmp_path, "slight", {"r5": 1.02}, seed=4)
    r = judge.compare(load.load_side(before), load.load_side(same))
    assert r.exit_code() == 0 and not any(x.verdict in ("regression", "improvement") for x in r.rows)
    r = judge.compare(load.load_side(before), load.load_side(slow))
    by = {x.region: x for x in r.rows}
    assert by["r5"].verdict == "regression" and by["r5"].low > 1.05 and r.exit_code() == 1
    assert all(by[f"r{k}"].verdict != "regression" for k in range(5))
    r = judge.compare(load.load_side(before), load.load_side(slight))
    assert {x.region: x for x in r.rows}["r5"].verdict != "regression" and r.exit_code() == 0
    # the rows of a region under --min-share are shown, not gating
    r = judge.compare(load.load_side(before), load.load_side(slow), min_share=0.5)  # r5: 6/21 of the total
    row = {x.region: x for x in r.rows}["r5"]
    assert row.gated is False and row.verdict == "regression" and not row.gates()
    assert "regression (not gating)" in next(line for line in render.render(r).splitlines() if " r5 " in line)


def test_synthetic_faster_growth_is_a_worse_class(tmp_path):
    from perfsweep.compare import judge, load

    before = synthetic_side(tmp_path, "before", {}, seed=5)
    after = synthetic_side(tmp_path, "after", {}, seed=6, grow={"r5": 2.0})
    r = judge.compare(load.load_side(before), load.load_side(after))
    row = {x.region: x for x in r.rows}["r5"]
    assert row.scaling == "worse" and row.orders_b.startswith(("n^2", "n^(7/4)", "n^(9/4)")) and r.exit_code() == 1
    assert all(x.scaling in ("same", "class uncertain") for x in r.rows if x.region not in ("r5", "all"))
    assert row.gates()


def test_holm():
    from perfsweep.compare.statistics import holm

    # hand-computed: sorted 0.01, 0.02, 0.04 x 3, 2, 1 -> 0.03, 0.04, 0.04 (monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert math.isnan(holm([math.nan, 0.5])[0]) and holm([math.nan, 0.5])[1] == 0.5


def test_target_defaults_to_largest_common_configuration_and_at_overrides(tmp_path):
    from perfsweep.compare import judge, load

    before = synthetic_side(tmp_path, "before", {}, seed=7)
    r = judge.compare(load.load_side(before), load.load_side(before))
    assert all(x.target == {"n": 1400.0} for x in r.rows)
    r = judge.compare(load.load_side(before), load.load_side(before), at={"n": 5000})
    assert all(x.target == {"n": 5000.0} for x in r.rows)
    assert all(x.ratio == pytest.approx(1.0) for x in r.rows)


def test_mismatched_parameters_without_a_map_is_one_line(tmp_path):
    from perfsweep.compare.load import EXTRAP_STUDY  # noqa: F401 (the study name of an input)

    a = synthetic_side(tmp_path, "a", {}, seed=8)
    b = tmp_path / "b"
    (b / "models" / "S").mkdir(parents=True)
    entries = json.loads((a / "models" / "S" / "models.json").read_text())
    for e in entries:
        e["model"]["param_names"] = ["size"]
        e["model"]["extrapolation"] = {"size": v for v in e["model"].get("extrapolation", {}).values()}
    (b / "models" / "S" / "models.json").write_text(json.dumps(entries))
    proc = compare(a, b)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"perfsweep: {b}/models/S/models.json: study S: parameters size do not match "
                                  f"{a}/models/S/models.json's n (give --param-map")
    ok = compare(a, b, "--param-map", "n=size")
    assert ok.returncode == 0, ok.stderr


def test_the_how_tos_commands_run_as_written(tmp_path):
    """docs/how-to/compare-sweeps.md's first command block, run line by line in a directory that holds
    what it names: two results directories (a region 20 % slower after) and two more baselines, one whose
    parameter has another name, and two of Extra-P's own inputs."""
    doc = (REPO / "docs" / "how-to" / "compare-sweeps.md").read_text()
    block = doc.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(commands) == 6 and all(c.startswith("perfsweep compare ") for c in commands)
    synthetic_side(tmp_path, "base1/results", {}, seed=15)
    synthetic_side(tmp_path, "base2/results", {}, seed=16)
    synthetic_side(tmp_path, "before/results", {}, seed=11)
    synthetic_side(tmp_path, "after/results", {"r5": 1.2}, seed=12)
    new = synthetic_side(tmp_path, "new/results", {}, seed=13)
    old = synthetic_side(tmp_path, "old/results", {}, seed=14)
    entries = json.loads((old / "models" / "S" / "models.json").read_text())
    for e in entries:
        e["model"]["param_names"] = ["size"]
        e["model"]["extrapolation"] = {"size": v for v in e["model"].get("extrapolation", {}).values()}
    (old / "models" / "S" / "models.json").write_text(json.dumps(entries))
    (old / "tables" / "S" / "aggregate.csv").unlink()
    for k in (1, 2):
        (tmp_path / f"run{k}.jsonl").write_bytes((EXTRAP / "jsonlines" / f"test{k}.jsonl").read_bytes())
    env = {**os.environ, "PATH": f"{PERFSWEEP.parent}{os.pathsep}{os.environ['PATH']}"}
    codes = {}
    for command in commands:
        proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (command, proc.returncode, proc.stderr)
        codes[command] = proc.returncode
    assert codes[commands[0]] == 1  # r5 20 % slower: a regression
    assert (tmp_path / "compare.html").stat().st_size > 0 and "| verdict |" in (tmp_path / "compare.md").read_text()
    assert codes[commands[3]] == 0 and new.is_dir()
    assert codes[commands[5]] == 1  # r5 20 % slower than three baselines


def test_ljmd_known_change_options_are_checked():
    bad = subprocess.run([sys.executable, "-m", "perfsweep.apps.ljmd", "--n", "100", "--m", "1", "--d", "0.5",
                          "--c", "1.5", "--slow-region", "forces=0.5"], capture_output=True, text=True,
                         env={**os.environ})
    assert bad.returncode == 2 and "--slow-region forces=0.5" in bad.stderr


# --- docs/how-to/compare-sweeps.md's "How to add a statistic", carried out ------------------------------------

NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4}


def recipe() -> tuple[int, list[str], str]:
    """The recipe's stated number of files, the files it lists (after ``<!-- recipe-files -->``) and its code."""
    doc = (REPO / "docs" / "how-to" / "compare-sweeps.md").read_text()
    section = doc.split("\n## How to add a statistic\n", 1)[1].split("\n## ", 1)[0]
    stated = re.search(r"touches (\d+|one|two|three|four) files?:", section)
    assert stated, "the recipe states how many files it touches"
    count = int(stated.group(1)) if stated.group(1).isdigit() else NUMBERS[stated.group(1)]
    listing = section.split("<!-- recipe-files -->\n", 1)[1].strip().split("\n\n", 1)[0]
    files = [re.match(r"- `([^`]+)`", line).group(1) for line in listing.splitlines()]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    return count, files, code


def test_the_recipe_adds_a_statistic_in_the_files_it_names(tmp_path):
    count, files, code = recipe()
    here = str(Path(__file__).relative_to(REPO))
    assert count == len(files) and here in files, (count, files)
    copy = tmp_path / "src" / "perfsweep"
    shutil.copytree(REPO / "src" / "perfsweep", copy, ignore=shutil.ignore_patterns("__pycache__"))
    # the steps: the function above STATISTICS, and the STATISTICS line as the recipe writes it
    function, registry = code.split("\nSTATISTICS", 1)
    registry = "STATISTICS" + registry.strip("\n")
    module = copy / "compare" / "statistics.py"
    text = module.read_text()
    old = re.findall(r"^STATISTICS\b.*\n", text, re.M)
    assert len(old) == 1 and len(registry.splitlines()) == 1, (old, registry)
    module.write_text(text.replace(old[0], function.rstrip("\n") + "\n\n\n" + registry + "\n"))
    changed = sorted(str(Path("src") / "perfsweep" / p.relative_to(copy)) for p in copy.rglob("*")
                     if p.is_file() and p.read_bytes() != (REPO / "src" / "perfsweep" / p.relative_to(copy)).read_bytes())
    assert changed == sorted(f for f in files if f != here), (changed, files)

    before = synthetic_side(tmp_path, "before", {}, seed=1)
    slow = synthetic_side(tmp_path, "slow", {"r5": 1.2}, seed=3)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    run = ("import sys, perfsweep, perfsweep.cli; assert perfsweep.__file__.startswith(sys.argv[1]), perfsweep.__file__; "
           "sys.exit(perfsweep.cli.main(sys.argv[2:]))")

    def compare_with_copy(fmt: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", run, str(copy), "compare", str(before), str(slow), "--format", fmt],
                              capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)

    proc = compare_with_copy("json")
    assert proc.returncode == 1, proc.stderr
    table = {r["region"]: r for r in json.loads(proc.stdout)["rows"]}
    assert all(0 <= r["mw_share"] <= 1 and 0 <= r["mw_p"] <= 1 for r in table.values()), table
    assert table["r5"]["mw_share"] > 0.95 and table["r5"]["mw_p"] < 0.01  # r5 20 % slower
    assert 0.05 < table["r2"]["mw_share"] < 0.95  # r2 unchanged
    # the statistic is reported, it does not gate: verdicts and exit code as the unchanged package's
    code, plain = rows(before, slow)
    assert code == proc.returncode and {k[0]: r["verdict"] for k, r in plain.items()} == \
        {k: r["verdict"] for k, r in table.items()}
    assert not any("mw_share" in r for r in plain.values())
    header = compare_with_copy("csv").stdout.splitlines()[0].split(",")
    assert header[-2:] == ["mw_share", "mw_p"], header
    text = compare_with_copy("text").stdout
    columns = next(line for line in text.splitlines() if not line.startswith("#")).split()
    assert columns[-3:] == ["mw_share", "mw_p", "notes"], columns
