"""README "Extending perfsweep": adding a metric, an app or a figure touches the files its list names and
no others (at most 3 each). The test makes the three additions in a copy of this checkout, touching
only the listed files, and runs the copy's workflow on the toy app: the new metric is modelled, the new
app runs, the new figure is drawn."""

import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import BIN, REPO
from test_plots import assert_figure

pytestmark = pytest.mark.slow

TOY_APP = '''"""A toy MPI app (tests/test_extending.py): size/p steps of work, then size steps in phase sync."""

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
    with timer.phase("sync"):  # e.g. the time a rank spends synchronizing with the others
        total += sum(i for i in range(args.size * 20000))  # ms of work that grow with size, above the noise of Barrier
        comm.Barrier()
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


def listed_files(kind: str) -> list[str]:
    """The files README's "Extending perfsweep" names for adding ``kind`` (its bullet's backticked paths)."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Extending perfsweep", 1)[1].split("\n## ", 1)[0]
    item = re.search(rf"^\*\*A{'n' if kind[0] in 'aeiou' else ''} {kind}\*\*.*?(?=^\*\*|\Z)", section, re.M | re.S)
    assert item, f"README: no item for adding a {kind}"
    return re.findall(r"`((?:src|workflow|config|scripts)/[^`]+)`", item.group(0))


class Checkout:
    """A copy of this checkout that records which files each addition touches."""

    def __init__(self, root):
        self.root, self.touched = root, {}

    def edit(self, kind, path, old, new):
        file = self.root / path
        text = file.read_text()
        assert old in text, (path, old)
        file.write_text(text.replace(old, new, 1))
        self.touched.setdefault(kind, set()).add(path)

    def write(self, kind, path, text):
        (self.root / path).write_text(text)
        self.touched.setdefault(kind, set()).add(path)


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("extending")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    copy = Checkout(tmp / "repo")
    for name in files:
        if (REPO / name).is_file() and not name.startswith(("tests/", "bench/", "resources/")):
            (copy.root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy.root / name)
    env = dict(os.environ, PYTHONPATH=str(copy.root / "src"))  # the copy's package, also for Snakemake

    # a metric: the phase "sync", timed by the app that measures it (the toy app below)
    copy.edit("metric", "src/perfsweep/apps/registry.py", 'MEASURED_PHASES = ("init", "compute", "io", "comm")',
              'MEASURED_PHASES = ("init", "compute", "io", "comm", "sync")')
    copy.write("metric", "src/perfsweep/apps/toy.py", TOY_APP)
    # an app: its module, its registry entry, the config reference written from the schema
    copy.write("app", "src/perfsweep/apps/toy.py", TOY_APP)
    copy.edit("app", "src/perfsweep/apps/registry.py", "BUILTIN_APPS: dict[str, BuiltinApp] = {",
              'BUILTIN_APPS: dict[str, BuiltinApp] = {\n    "toy": BuiltinApp(module="perfsweep.apps.toy", '
              'params={"size": ParamSpec(int, 1, False, "thousands of steps")}),')
    doc = subprocess.run([sys.executable, "-m", "perfsweep.config_doc"], env=env, check=True,
                         capture_output=True, text=True).stdout
    copy.write("app", "config/README.md", doc)
    # a figure: its drawing (plots/), its parameter and call in the figures stage, its output in the rule
    copy.write("figure", "src/perfsweep/plots/toy.py", TOY_PLOT)
    copy.edit("figure", "src/perfsweep/stages/figures.py", "model_vs_measurement: PathLike, varied",
              "model_vs_measurement: PathLike, toy: PathLike, varied")
    copy.edit("figure", "src/perfsweep/stages/figures.py", "    var_plot(var, study, variability_figure)\n",
              "    var_plot(var, study, variability_figure)\n"
              "    from perfsweep.plots.toy import toy_bars\n\n    toy_bars(med, toy)\n")
    copy.edit("figure", "workflow/rules/figures.smk", "    params:\n",
              '        toy=f"{R}/figures/{{study}}/toy.png",\n    params:\n')

    work = tmp / "work"
    work.mkdir()
    cfg = {"app": {"name": "toy"}, "parameters": {"size": 20, "p": 1}, "repetitions": 2,
           "studies": {"toy_p": {"vary": {"size": [10, 20, 40, 80, 160]}, "fixed": {"p": 2}}}, "results": "results"}
    (work / "toy.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["results/figures/toy_p/toy.png", "results/models/toy_p/models.csv"]
    proc = subprocess.run([BIN / "snakemake", "--snakefile", copy.root / "Snakefile", "--configfile", "toy.yaml",
                           "--cores", "2", *targets], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return copy, work / "results"


@pytest.mark.parametrize("kind", ["metric", "app", "figure"])
def test_readme_lists_every_file_an_addition_touches(extended, kind):
    copy, _ = extended
    listed = listed_files(kind)
    assert 1 <= len(listed) <= 3, listed
    touched = copy.touched[kind]
    # the app's module is named by the README with a placeholder (<app>): match it by its folder
    named = {re.sub(r"<[^>]+>", "toy", p) for p in listed}
    assert touched <= named, (touched, listed)


def test_added_metric_is_aggregated_and_modelled(extended):
    _, results = extended
    models = pd.read_csv(results / "models" / "toy_p" / "models.csv")
    sync = models[(models["region"] == "all") & (models["metric"] == "sync")]
    assert len(sync) == 1 and isinstance(sync["model"].iloc[0], str), models[["metric", "model", "reason"]]
    assert "size" in sync["model"].iloc[0], sync["model"].iloc[0]  # it grows with size, as the toy app does


def test_added_app_runs_and_added_figure_is_drawn(extended):
    _, results = extended
    runs = pd.read_csv(results / "tables" / "toy_p" / "runs.csv")
    assert len(runs) == 10 and (runs["status"] == "ok").all() and (runs["p"] == 2).all()
    png = results / "figures" / "toy_p" / "toy.png"
    assert len(assert_figure(png)) == 5  # it decodes, is of a readable size, shows something; its CSV has 5 rows
