"""docs/how-to/extend.md: adding an app, a metric or a figure changes the files its recipe lists and no
others, as many as the recipe says. The recipes are followed in a copy of this checkout (an app, then a
metric it measures, then a figure), and the files each one changed there are compared with its list and
its count (fast); then the copy's workflow runs on the toy app (slow): the new metric is modelled, the new
app runs, the new figure is drawn."""

import hashlib
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import BIN, REPO
from sweeps.lane import session_sweep
from test_plots import assert_figure
from perfsweep.report_check import report_categories

EXTEND_DOC = REPO / "docs" / "how-to" / "extend.md"

TOY_APP = '''"""A toy MPI app (tests/test_extending.py): size/p steps of work on every rank, and on the last rank
(the straggler) size steps more; the other ranks wait for it at a barrier, in phase sync."""

import argparse
import sys


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--report")
    args = ap.parse_args(argv)
    from mpi4py import MPI

    from perfsweep.apps.instrument import RankTimer, write_app_report

    comm = MPI.COMM_WORLD
    timer = RankTimer()
    with timer.phase("compute"):
        total = sum(i * i for i in range(args.size * 1000 // comm.Get_size()))
        # the last rank's extra work grows with size and is about 0.2 s at size 80: far above the noise of
        # Barrier and of the other ranks' compute, which 3 ranks on 2 cores stretch by a time slice or two
        # (at 20000 per size, about 50 ms, a rank that waited was flagged in about half the runs)
        if comm.Get_rank() == comm.Get_size() - 1:
            total += sum(i for i in range(args.size * 80000))
    comm.Barrier()  # the other ranks wait for the last one here
    write_app_report(comm, timer, args.report, app="toy", parameters={"size": args.size, "p": comm.Get_size()},
                     extra={"total": total})
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

TOY_PLOT = '''"""A toy figure (tests/test_extending.py): the median time per configuration as bars."""

import pandas as pd

from perfsweep.plots.style import new_figure, save_figure


def toy_bars(medians: pd.DataFrame, path) -> None:
    fig, axes = new_figure()
    axes[0, 0].bar(medians["config_id"], medians["median"])
    save_figure(fig, path, medians[["config_id", "median"]])
'''


def recipe(kind: str) -> str:
    """The section of docs/how-to/extend.md on adding ``kind``."""
    text = EXTEND_DOC.read_text()
    item = re.search(rf"^## Adding an? {kind}\b.*?(?=^## |\Z)", text, re.M | re.S)
    assert item, f"{EXTEND_DOC.relative_to(REPO)}: no section for adding a {kind}"
    return item.group(0)


def listed_files(kind: str) -> list[str]:
    """The files docs/how-to/extend.md names for adding ``kind`` (its item's backticked paths)."""
    return re.findall(r"`((?:src|workflow|config|scripts)/[^`]+)`", recipe(kind))


def stated_count(kind: str) -> int:
    """The number of files the recipe says it touches ("Touches 3 files:")."""
    found = re.findall(r"\bTouches (\d+) files?:", recipe(kind))
    assert len(found) == 1, f"the recipe for adding a {kind} states no (or more than one) file count: {found}"
    return int(found[0])


class Checkout:
    """A copy of this checkout; ``recipe(kind)`` records the files the edits made under it changed, as found
    by comparing every file of the copy before and after (a file written with its old text is no change)."""

    def __init__(self, root):
        self.root, self.changed = root, {}

    def _state(self):
        return {str(f.relative_to(self.root)): hashlib.sha256(f.read_bytes()).hexdigest()
                for f in self.root.rglob("*") if f.is_file() and "__pycache__" not in f.parts}

    def recipe(self, kind, steps):
        before = self._state()
        steps()
        after = self._state()
        self.changed[kind] = {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}

    def edit(self, path, old, new):
        file = self.root / path
        text = file.read_text()
        assert old in text, (path, old)
        file.write_text(text.replace(old, new, 1))

    def write(self, path, text):
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)


@session_sweep("extending")
def recipes(tmp):
    """A copy of this checkout with the three recipes followed in it, one after the other. This and
    ``extended`` are session sweeps (tests/sweeps/lane.py), which the test lane may make beside the other
    tests."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    copy = Checkout(tmp / "repo")
    for name in files:
        if (REPO / name).is_file() and not name.startswith(("tests/", "bench/", "resources/")):
            (copy.root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy.root / name)
    env = dict(os.environ, PYTHONPATH=str(copy.root / "src"))  # the copy's package, also for Snakemake

    # an app: its module, its registry entry, the config reference written from the schema
    def app():
        copy.write("src/perfsweep/apps/toy.py", TOY_APP)
        copy.edit("src/perfsweep/apps/registry.py", "BUILTIN_APPS: dict[str, BuiltinApp] = {",
                  'BUILTIN_APPS: dict[str, BuiltinApp] = {\n    "toy": BuiltinApp(module="perfsweep.apps.toy", '
                  'params={"size": ParamSpec(int, 1, False, "thousands of steps")}),')
        doc = subprocess.run([sys.executable, "-m", "perfsweep.config_doc"], env=env, check=True,
                             capture_output=True, text=True).stdout
        copy.write("config/README.md", doc)

    # a metric: the phase "sync", timed by the app that measures it (the toy app); a rank waits there, so it
    # is declared as waiting
    def metric():
        copy.edit("src/perfsweep/apps/registry.py", 'MEASURED_PHASES = ("init", "compute", "io", "comm")',
                  'MEASURED_PHASES = ("init", "compute", "io", "comm", "sync")')
        copy.edit("src/perfsweep/apps/registry.py", 'WAITING_PHASES = ("comm",)', 'WAITING_PHASES = ("comm", "sync")')
        copy.edit("src/perfsweep/apps/toy.py", "    comm.Barrier()  # the other ranks wait for the last one here\n",
                  '    with timer.phase("sync"):  # the time a rank spends waiting for the others\n'
                  "        comm.Barrier()\n")

    # a figure: its drawing (plots/), its parameter and call in the figures stage, its output in the rule
    def figure():
        copy.write("src/perfsweep/plots/toy.py", TOY_PLOT)
        copy.edit("src/perfsweep/stages/figures.py", "model_vs_measurement: PathLike, varied",
                  "model_vs_measurement: PathLike, toy: PathLike, varied")
        copy.edit("src/perfsweep/stages/figures.py", "    var_plot(var, study, variability_figure)\n",
                  "    var_plot(var, study, variability_figure)\n"
                  "    from perfsweep.plots.toy import toy_bars\n\n    toy_bars(med, toy)\n")
        copy.edit("src/perfsweep/layout.py", '"model_vs_measurement": "model_vs_measurement.png"}',
                  '"model_vs_measurement": "model_vs_measurement.png", "toy": "toy.png"}')
        copy.edit("workflow/rules/figures.smk", "    params:\n",
                  '        toy=report(stage_output("figures", "toy"), caption="../report/toy.rst", category="{study}",\n'
                  '                   subcategory="measurements"),\n    params:\n')
        copy.write("workflow/report/toy.rst", "The median time of every configuration of study "
                   "{{ snakemake.wildcards.study }} as bars.\n")

    for kind, steps in (("app", app), ("metric", metric), ("figure", figure)):
        copy.recipe(kind, steps)
    return copy, env


@session_sweep("extended")
def extended(tmp, recipes):
    """The copy's workflow run on the toy app: (the copy, its results, its environment). A sweep of its
    own, not the session's shared ones: what it tests is the copy's changed code (a new app, metric and
    figure), which no sweep of this checkout's package runs."""
    copy, env = recipes
    work = tmp / "work"
    work.mkdir()
    cfg = {"app": {"name": "toy"}, "parameters": {"size": 20, "p": 1}, "repetitions": 2,
           "studies": {"toy_p": {"vary": {"size": [10, 20, 40, 80, 160]}, "fixed": {"p": 2}},
                       "toy_ranks": {"vary": {"p": [1, 2, 3]}, "fixed": {"size": 80}}},  # 3 ranks: one may stand out
           "results": "results"}
    (work / "toy.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/figures/toy_p/toy.png", "results/models/toy_p/models.csv",
               "results/metrics/toy_ranks/observables.csv"]
    # one Snakemake start: the targets, then the report of what they made (--report-after-run)
    proc = subprocess.run([BIN / "snakemake", "--snakefile", copy.root / "Snakefile", "--configfile", "toy.yaml",
                           "--cores", "2", "--report", "report.html", "--report-after-run", *targets], cwd=work,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return copy, work / "results", env


@pytest.mark.parametrize("kind", ["metric", "app", "figure"])
def test_a_recipe_changes_exactly_the_files_it_lists_and_counts(recipes, kind):
    copy, _ = recipes
    listed = listed_files(kind)
    # the page names the new app's module, figure and caption with a placeholder (<app>, <kind>): the toy's
    named = {re.sub(r"<[^>]+>", "toy", p) for p in listed}
    assert copy.changed[kind] == named, (copy.changed[kind], listed)
    assert len(copy.changed[kind]) == len(listed) == stated_count(kind), (kind, stated_count(kind), listed)


@pytest.mark.slow
def test_added_metric_is_aggregated_and_modelled(extended):
    _, results, _ = extended
    models = pd.read_csv(results / "models" / "toy_p" / "models.csv")
    sync = models[(models["region"] == "all") & (models["metric"] == "sync")]
    assert len(sync) == 1 and isinstance(sync["model"].iloc[0], str), models[["metric", "model", "reason"]]
    assert "size" in sync["model"].iloc[0], sync["model"].iloc[0]  # it grows with size, as the toy app does


@pytest.mark.slow
def test_added_app_runs_and_added_figure_is_drawn(extended):
    _, results, _ = extended
    runs = pd.read_csv(results / "tables" / "toy_p" / "runs.csv")
    assert len(runs) == 10 and (runs["status"] == "ok").all() and (runs["p"] == 2).all()
    png = results / "figures" / "toy_p" / "toy.png"
    assert len(assert_figure(png)) == 5  # it decodes, is of a readable size, shows something; its CSV has 5 rows
    # every PNG of a sweep must be in its report (tests/test_report.py): the new one is, with its caption
    shown = report_categories(results.parent / "report.html")["toy_p"]["measurements"]
    assert any(entry.endswith("figures/toy_p/toy.png") for entry in map(str, shown)), shown



STRAGGLERS = """import sys
import pandas as pd
from perfsweep.metrics.observables import from_pipeline_ranks
from perfsweep.metrics.stragglers import flag_stragglers
ranks = flag_stragglers(from_pipeline_ranks(pd.read_csv(sys.argv[1])), ["run_id"], t_col="t_busy")
for run_id, run in ranks[ranks["p"] == 3].groupby("run_id"):
    slow = run[run["rank"] == 2]["t_busy"].iloc[0]
    print(sorted(run[run["straggler"]]["rank"]), (run[run["rank"] < 2]["t_wait"] > 0.5 * slow).all())
"""


@pytest.mark.slow
def test_a_waiting_phase_is_not_busy_time(extended):
    """The added phase sync is declared as waiting: in every run of 3 ranks the last rank, which worked
    longer, is the one straggler, and the two ranks that waited for it in sync (most of their time) are
    not (the metrics stage's count, and per rank with the copy's own package)."""
    _, results, env = extended
    observables = pd.read_csv(results / "metrics" / "toy_ranks" / "observables.csv")
    three = observables[observables["p"] == 3]
    assert len(three) == 2 and (three["stragglers"] == 1).all(), observables
    out = subprocess.run([sys.executable, "-c", STRAGGLERS, results / "tables" / "toy_ranks" / "ranks.csv"],
                         env=env, check=True, capture_output=True, text=True).stdout.splitlines()
    assert out == ["[2] True", "[2] True"], out


def test_a_waiting_phase_counted_as_busy_flags_the_rank_that_waited(monkeypatch):
    """Why a waiting phase is declared: a root that waits 0.5 s for the others' results in phase sync
    (rank 4 is the slow one). Declared as waiting, rank 4 alone is a straggler; counted as busy time, the
    root is flagged beside it."""
    from perfsweep.metrics import observables
    from perfsweep.metrics.stragglers import flag_stragglers

    compute = [1.0, 1.0, 1.01, 0.99, 1.5]
    sync = [0.5, 0.0, 0.0, 0.0, 0.0]
    ranks = pd.DataFrame({"run_id": "r", "rank": range(5), "init": 0.0, "compute": compute, "io": 0.0,
                          "comm": 0.0, "sync": sync, "total": [c + s for c, s in zip(compute, sync)]})

    def stragglers(waiting):
        monkeypatch.setattr(observables, "WAITING_PHASES", waiting)
        flagged = flag_stragglers(observables.from_pipeline_ranks(ranks), ["run_id"], t_col="t_busy")
        return flagged[flagged["straggler"]]["rank"].tolist()

    assert stragglers(("comm", "sync")) == [4]
    assert stragglers(("comm",)) == [0, 4]
