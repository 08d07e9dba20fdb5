"""``perfsweep compare`` (issue 36): the verdicts on real timings of the built-in ljmd (real Snakemake, real
MPI ranks) with and without a known change, two Extra-P inputs, the statistics on synthetic models, and
bad input.

The real-timing tests read one shared paired sweep (tests/sweeps/paired.py, ``paired_ljmd``): the tiny
study T(n) with the variants before, copy (a replicate), whole (steps 180: +20 %) and region (the force
region +20 %), each configuration's variants back to back in every round, judged by ``perfsweep compare
RESULTS --variants before,X``. They were two sweeps each, run side by side or one after the other: those
cannot cancel the host's drift between them (two replicate sweeps minutes apart differed by 29 % in
compute time here), and CI saw the region's regression "inconclusive" by it. The paired design cancels
the drift of the moment (bench/compare_power.py: 60 replicate comparisons without a false alarm, the
+20 % changes caught 39 of 40, idle and busy); they assert only the verdicts it makes robust, and carry
the ``timing`` marker. What no real timing decides every time (a 2 % change being no regression, a
faster-growing term being a worse scaling class, power) is asserted on seeded synthetic sweeps below
(test_synthetic_*) and in tests/test_compare_gate.py, and measured by bench/compare_power.py.
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

from conftest import REPO
from sweeps.paired import LJMD, compare_json

PERFSWEEP = Path(sys.executable).with_name("perfsweep")
EXTRAP = REPO / "tests" / "data" / "extrap"

# the tiny study of bench/compare_power.py (which imports it): tests/sweeps/paired.py's paired_ljmd without
# its variants, 5 repetitions
TINY = {**{k: v for k, v in LJMD.items() if k != "variants"}, "repetitions": 5}


def compare(a, b, *more, cwd=None):
    return subprocess.run([str(PERFSWEEP), "compare", str(a), str(b), *map(str, more)], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def rows(a, b, *more) -> tuple[int, dict]:
    proc = compare(a, b, "--format", "json", *more)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == proc.returncode
    return proc.returncode, {(r["region"], r["metric"]): r for r in data["rows"]}


def variants(sweep, a: str, b: str, *more) -> subprocess.CompletedProcess:
    """``perfsweep compare RESULTS --variants A,B [MORE]`` of a paired sweep."""
    return subprocess.run([str(PERFSWEEP), "compare", str(sweep.results), "--variants", f"{a},{b}", *map(str, more)],
                          capture_output=True, text=True, timeout=300)


def variant_rows(sweep, a: str, b: str) -> tuple[int, dict]:
    code, data = compare_json(sweep.results, a, b)
    assert data["exit_code"] == code and data["paired"]
    return code, {(r["region"], r["metric"]): r for r in data["rows"]}


# regions of ljmd that do not contain the forces (those that do: all, step, all/compute)
NOT_FORCES = [("step/neighbours", "time"), ("step/integrate", "time"), ("step/output", "time"), ("setup", "time"),
              ("all", "init"), ("all", "io"), ("all", "comm")]


@pytest.mark.slow
@pytest.mark.timing
def test_replicate_sweeps_no_change(paired_ljmd):
    """Two variants of the same app (before and its copy) measured as pairs: every gating row 'no
    significant change' or 'inconclusive' (no ratio regression, no improvement), and the exit code is the
    one its rows give (1 only where a gating row's scaling class is 'worse'). Measured once more by
    paired_ljmd's rule (tests/sweeps/paired.py) where the changed rows' mde is above 10 %.

    Not asserted here: that no scaling class gates. That test has no threshold band (any change of the lead
    order beyond its resamples), so a replicate pair alarms at about its alpha by design, and more often
    where configurations drift more than their repetitions show (bench/compare_false_alarms.py: 4.5 % and
    9.0 % of seeded replicates at 2 % and 3 % drift); of the 19 runs of this sweep whose logs are
    committed (bench/results/suite, bench/results/timing_tests) one gated a 'worse' class
    (suite/c65eab2-quiet). That rate is asserted where the seed decides it: tests/test_compare_gate.py's
    seeded replicates; bench/compare_power.py counts it on real sweeps."""
    code, table = variant_rows(paired_ljmd, "before", "copy")
    gating = {k: r for k, r in table.items() if r["gated"]}
    shown = (paired_ljmd.mdes, gating)
    assert gating and all(r["verdict"] in ("no significant change", "inconclusive") for r in gating.values()), shown
    worse = [k for k, r in gating.items() if r["scaling"] == "worse"]
    assert code == (1 if worse else 0), shown
    text = variants(paired_ljmd, "before", "copy")
    assert text.returncode == code
    assert ("no gated regression (exit 0)" in text.stdout) == (code == 0), text.stdout


@pytest.mark.slow
@pytest.mark.timing
def test_one_region_slowed_20_percent_is_that_regions_regression(paired_ljmd):
    """The force region 20 % slower (variant region, ``slow-region forces=1.2``): that region a
    regression, exit 1, no other gating region one. The ratio may reach 1.45: slowed by sleeps of 0.2x its
    own time, the region's medians came out 1.25-1.37x the "before" sweep's in two-sweep runs here (its
    own compute after a sleep runs slower); paired, bench/compare_power.py saw 1.18-1.21. Rows below
    --min-share are not asserted: regions of a few ms (all/comm, 4 ms at n = 1200) are shown, not gating.
    Measured once more by paired_ljmd's rule (tests/sweeps/paired.py) where this row's mde is above 10 %."""
    code, table = variant_rows(paired_ljmd, "before", "region")
    forces = table["step/forces", "time"]
    assert forces["verdict"] == "regression", (paired_ljmd.mdes, forces)
    assert 1.1 < forces["ratio"] < 1.45 and forces["low"] > 1.0, forces
    assert code == 1
    for key in NOT_FORCES:
        assert not table[key]["gated"] or table[key]["verdict"] != "regression", table[key]


@pytest.mark.slow
@pytest.mark.timing
def test_a_whole_program_20_percent_slower_is_a_regression(paired_ljmd):
    """Every step more work (variant whole: steps 180 instead of 150): the whole run a regression of
    ratio 1.1-1.3, exit 1; never an "improvement" of the region that did not change (setup); the app's
    changed argument listed at the top. Measured once more by paired_ljmd's rule (tests/sweeps/paired.py)
    where this row's mde is above 10 %. (Two sweeps one after the other cannot promise this verdict: a
    whole-sweep drift of the host is a whole-program change; "one baseline: whole-sweep drift is
    unknown", their note, is tests/test_compare_gate.py's. Exit 1 on every row 1.2x, whatever the noise:
    its synthetic sweeps.)"""
    code, table = variant_rows(paired_ljmd, "before", "whole")
    whole = table["all", "time"]
    assert whole["verdict"] == "regression" and 1.1 < whole["ratio"] < 1.3, (paired_ljmd.mdes, whole)
    assert code == 1
    assert table["setup", "time"]["verdict"] != "improvement"
    text = variants(paired_ljmd, "before", "whole").stdout
    assert "# setting differs: study T_n: app command of " in text and "150 (A) -> 180 (B)" in text, text[:2000]
    assert "paired measurement: A and B are variants of one sweep" in text


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
                   grow: dict[str, float] | None = None, drift: float = 0.0) -> Path:
    """A results directory with one study of n: regions r0..r5 (time c_k * n, region 'all' their sum),
    each multiplied by ``factors`` and with log-normal noise of ``noise`` per repetition (5 repetitions).
    ``drift``: every configuration's runs moved by one log-normal factor of that spread, the same for all
    its regions and repetitions (the host's drift between configurations measured at different times,
    which the repetitions of one configuration do not show)."""
    from perfsweep.modeling.pipeline import fit_study_models

    rng = np.random.default_rng(seed)
    n = np.array([400, 600, 800, 1000, 1200, 1400], float)
    rows_ = []
    regions = {f"r{k}": (k + 1) * 1e-5 for k in range(6)}
    totals = np.zeros((len(n), 5))
    moved = np.exp(rng.normal(0, drift, (len(n), 1))) if drift else 1.0
    for region, c in regions.items():
        exponent = (grow or {}).get(region, 1.0)
        y = c * n[:, None] ** exponent * factors.get(region, 1.0) * moved * np.exp(rng.normal(0, noise, (len(n), 5)))
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
    """A region whose time grows like n^2 instead of n (as ljmd's ``--all-pairs`` pass makes its region's):
    its scaling class confidently worse, its lead order another, a regression, exit 1; the regions that
    did not change neither worse nor a regression; the page draws every row and says "worse". (On real
    timings of two sweeps the class stayed "uncertain" at 5 repetitions and took 20 once: a class is a
    statistical property, so it is asserted here, on seeded draws.)"""
    from perfsweep.compare import judge, load

    before = synthetic_side(tmp_path, "before", {}, seed=5)
    after = synthetic_side(tmp_path, "after", {}, seed=6, grow={"r5": 2.0})
    r = judge.compare(load.load_side(before), load.load_side(after))
    row = {x.region: x for x in r.rows}["r5"]
    assert row.scaling == "worse" and row.orders_b.startswith(("n^2", "n^(7/4)", "n^(9/4)")) and r.exit_code() == 1
    assert row.orders_a != row.orders_b and row.verdict == "regression"
    assert all(x.scaling in ("same", "class uncertain") for x in r.rows if x.region not in ("r5", "all"))
    assert all(x.verdict != "regression" for x in r.rows if x.region not in ("r5", "all"))
    assert row.gates()
    page = tmp_path / "page.html"
    proc = compare(before, after, "--html", page)
    assert proc.returncode == 1, proc.stderr
    html = page.read_text()
    assert "worse" in html and html.count("<img") == len(r.rows) and "http" not in html.replace("http-equiv", "")


def test_synthetic_unresolved_rows_are_named_in_the_json(tmp_path):
    """Sides whose repetitions spread by 30 % (seeded): the rows that cannot resolve the threshold are
    named in the JSON's ``unresolved`` list (study/region/metric), the whole run among them, as the
    summary line names them (the two-sweep whole-program test asserted this where its host was too loaded
    to resolve 20 %; the summary line itself: tests/test_compare_gate.py)."""
    from perfsweep.compare import judge, load

    a = synthetic_side(tmp_path, "a", {}, noise=0.3, seed=21)
    b = synthetic_side(tmp_path, "b", {"r5": 1.2}, noise=0.3, seed=22)
    expected = [f"{x.study}/{x.region}/{x.metric}" for x in judge.compare(load.load_side(a), load.load_side(b)).unresolved()]
    proc = compare(a, b, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    assert data["unresolved"] == expected and "S/all/time" in expected, (data["unresolved"], expected)


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


def test_ljmd_runs_its_all_pairs_pass(tmp_path):
    """ljmd's ``--all-pairs forces`` (the faster-growing term the compare tests once swept; its verdict is
    test_synthetic_faster_growth_is_a_worse_class's) runs its pass in the force region: a run of one rank
    (no MPI launcher, a few steps) reports every region with every step visited, as the plain run does."""
    reports = {}
    for name, change in (("plain", []), ("pairs", ["--all-pairs", "forces"])):
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, "-m", "perfsweep.apps.ljmd", "--n", "300", "--m", "1", "--d", "0.5",
                               "--c", "2.0", "--steps", "4", *change, "--report", str(out)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        reports[name] = json.loads(out.read_text())["ranks"][0]["regions"]
    assert reports["pairs"].keys() == reports["plain"].keys() and "step/forces" in reports["pairs"]
    assert {k: v["visits"] for k, v in reports["pairs"].items()} == {k: v["visits"] for k, v in reports["plain"].items()}


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
