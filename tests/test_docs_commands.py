"""Every command block in README.md and docs/**/*.md is accounted for: it is run here (in a temporary user
directory, on a small sweep where the documented command sweeps), or covered by a named existing test
that runs that command (COVERED: the test is checked to exist and to name the command's words), or the
block is marked in the markdown as needing a cluster (an HTML comment ``<!-- needs: slurm -->`` on the
line before it). A page may also name the test that runs a block's commands on the line before it,
``<!-- covered-by: tests/test_x.py::test_name -->`` (checked like COVERED: the test exists and its file
names each command's subcommand). A new command block that is none of these fails
test_every_command_is_run_covered_or_marked."""

import json
import os
import re
import shutil
import subprocess
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from conftest import BIN, REPO
from sweeps.lane import session_sweep
from test_report import each_model_figure
from test_plots import assert_figure

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SHELL = {"", "sh", "bash", "shell", "console"}  # info strings of fenced blocks that hold commands
MARK = re.compile(r"<!--\s*needs:\s*([\w -]+?)\s*-->")
COVERED_MARK = re.compile(r"<!--\s*covered-by:\s*(\S+?)\s*-->")
NEEDS = {"slurm"}  # what a block may be marked as needing


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # 1-based, of the block's first line
    lang: str
    text: str
    needs: str | None
    covered_by: str | None = None

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def code_blocks(doc: Path) -> list[Block]:
    """The fenced blocks of a markdown file, and its indented (4-space) code blocks outside fences and lists."""
    lines = doc.read_text().split("\n")
    blocks, i = [], 0

    def marker(at: int, mark=MARK) -> str | None:
        j = at - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        found = mark.search(lines[j]) if j >= 0 else None
        return found.group(1) if found else None

    while i < len(lines):
        fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append(Block(doc, i + 2, fence.group(2), "\n".join(lines[i + 1:end]), marker(i),
                                marker(i, COVERED_MARK)))
            i = end + 1
            continue
        prev = lines[i - 1] if i else ""
        context = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        if lines[i].startswith("    ") and not prev.strip() and not re.match(r"^\s*([-*]|\d+\.)\s|^  ", context):
            start = i
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                i += 1
            text = "\n".join(ln[4:] for ln in lines[start:i]).strip("\n")
            blocks.append(Block(doc, start + 1, "", text, marker(start)))
            continue
        i += 1
    return blocks


def commands(block: Block) -> list[str]:
    """A shell block's commands: continuation lines joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", "", block.text)
    out = []
    for line in joined.split("\n"):
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(re.sub(r"\s+", " ", line))
    return out


def documented() -> dict[str, list[Block]]:
    """{command: the unmarked blocks it appears in} over README.md and docs/."""
    found: dict[str, list[Block]] = {}
    for doc in DOCS:
        for block in code_blocks(doc):
            if block.lang in SHELL and block.needs is None and block.covered_by is None:
                for cmd in commands(block):
                    found.setdefault(cmd, []).append(block)
    return found


# (b) Commands an existing test runs: {command: (test, words of the command that test's file must contain)}.
COVERED = {
    "make test": (".ci/run", ["make test"]),  # the CI entry point runs the whole suite with this command
    ".venv/bin/snakemake -n --configfile config/ms2-paper.yaml":
        ("tests/test_config.py::test_paper_config_plans_all_runs", ['"-n"', "ms2-paper.yaml"]),
    ".venv/bin/snakemake --cores 1 paper_hofinger":
        ("tests/test_overhead.py::test_paper_target_writes_the_reproduction", ['"paper_hofinger"']),
}

# (a) Commands run by test_documented_commands_run, in this order, in one user directory (see user_dir): a
# copy of the session's shared ljmd sweep (tests/sweeps/ljmd.py), whose studies are named as the default
# config's, so that the commands that read a sweep's results run on it as the docs write them.
RUN = [
    "make run",  # config/config.yaml of the user directory: the shared sweep's config (its report removed)
    ".venv/bin/perfsweep validate my.yaml",
    ".venv/bin/perfsweep plan my.yaml",
    "make run CONFIG=my.yaml",
    ".venv/bin/perfsweep run my.yaml --cores 2 --no-report",
    ".venv/bin/perfsweep run my.yaml --cores 2 -- --report results/report.zip",
    ".venv/bin/perfsweep check-records results/runs results/archive",
    ".venv/bin/perfsweep predict results/models/T_n_p/models.json n=4000 p=1,2,4,8",
    '.venv/bin/perfsweep recommend results/models/T_n_p/models.json n=2000 p=1,2,3,4,6,8 --objective core_hours '
    '--constraint "p<=8" --min-efficiency 0.5 --upper',
    ".venv/bin/perfsweep models resources/reference-data/extrap/mm_cube_1p --out models/mm",
    '.venv/bin/perfsweep predict models/mm/models.json x=4000 --region "main->mat_mul" --metric time',
]


def test_every_command_is_run_covered_or_marked():
    found = documented()
    assert found, "no command block found in README.md and docs/"
    unhandled = {cmd: [b.where for b in blocks] for cmd, blocks in found.items() if cmd not in RUN and cmd not in COVERED}
    assert not unhandled, ("command blocks that no test runs: add them to RUN or COVERED in "
                           f"tests/test_docs_commands.py, or mark the block <!-- needs: slurm -->: {unhandled}")


def test_a_page_names_a_test_that_exists_and_runs_its_commands():
    for doc in DOCS:
        for block in code_blocks(doc):
            if block.covered_by is None:
                continue
            path, _, name = block.covered_by.partition("::")
            assert (REPO / path).is_file() and name, f"{block.where}: covered-by {block.covered_by}: no such test"
            text = (REPO / path).read_text()
            assert re.search(rf"^def {name}\(", text, re.M), f"{block.where}: {block.covered_by} does not exist"
            for cmd in commands(block):
                words = cmd.split()
                assert len(words) > 1 and f'"{words[1]}"' in text, f"{block.where}: {path} never runs {cmd!r}"


def test_marks_name_a_cluster_and_precede_a_command_block():
    for doc in DOCS:
        marks = [m.group(1) for m in MARK.finditer(doc.read_text())]
        marked = [b.needs for b in code_blocks(doc) if b.needs]
        assert sorted(marks) == sorted(marked), f"{doc}: a needs-mark not right before a code block"
        assert set(marked) <= NEEDS, (doc, marked)


def test_every_entry_is_documented_and_every_covering_test_exists():
    found = documented()
    assert [cmd for cmd in [*RUN, *COVERED] if cmd not in found] == []  # no stale entry
    for cmd, (test, words) in COVERED.items():
        path, _, name = test.partition("::")
        text = (REPO / path).read_text()
        assert not name or re.search(rf"^def {name}\(", text, re.M), f"{test} does not exist"
        body = text.split(f"def {name}(", 1)[1] if name else text
        assert all(w in body or w in text for w in words), (cmd, test, words)


def test_the_readme_is_a_map_whose_first_lines_are_the_two_commands():
    lines = (REPO / "README.md").read_text().split("\n")
    assert len(lines) <= 150, len(lines)
    first = code_blocks(REPO / "README.md")[0]
    assert first.line <= 4 and commands(first) == ["make run", "make test"], first
    for target in ("run", "test"):  # and they are the Makefile's
        assert re.search(rf"^{target}: setup$", (REPO / "Makefile").read_text(), re.M)


# what a measurement in prose looks like: a date, "measured on", a duration, a size, a fitted coefficient
DATED_FIGURES = {
    "a date": r"\b\d{4}-\d{2}-\d{2}\b",
    "measured on": r"(?i)\bmeasured on\b",
    "a duration": r"\b\d+(?:\.\d+)? ?(?:s|ms|min|seconds?|minutes?|hours?)\b",
    "a size": r"\b\d+(?:\.\d+)? ?[KMG]i?B\b",
    "a fitted coefficient": r"\b\d+(?:\.\d+)?e[-+]?\d+\b|=\s*-?\d+\.\d+\s*[-+]",
}


def test_the_readme_holds_no_dated_figure_and_links_the_one_place_that_does():
    """A new measurement edits docs/explanation/default-sweep.md (its section "Its latest measurement") and
    bench/README.md, never the README, which links them."""
    readme = (REPO / "README.md").read_text()
    found = {what: re.findall(pattern, readme) for what, pattern in DATED_FIGURES.items()}
    assert {what: hits for what, hits in found.items() if hits} == {}
    assert "docs/explanation/default-sweep.md#its-latest-measurement" in readme and "bench/README.md" in readme
    page = (REPO / "docs" / "explanation" / "default-sweep.md").read_text()
    assert re.search(r"^## Its latest measurement$", page, re.M)
    # and the checks would see a figure of the kind the README used to quote
    old = "`make run` took 206 s (2026-11-26), report 4.5 MB; T(n, p) = 0.0133 + 5.24e-5 n + 5.17e-4 n / p"
    assert all(re.search(pattern, old) for pattern in DATED_FIGURES.values() if "measured" not in pattern)


def test_links_between_the_docs_resolve():
    broken = []
    for doc in [*DOCS, REPO / "bench" / "README.md"]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            if target.endswith("compare-sweeps.md"):  # written on its own branch (the compare command)
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(REPO)} -> {target}")
    assert broken == []


def user_dir(ljmd_sweep, where: Path) -> Path:
    """A user's directory beside the checkout: its venv (a link), the Makefile, a config/config.yaml and my.yaml
    of a small sweep (the shared ljmd sweep's config), and the reference data the docs model (a link).
    The sweep is the shared one (a copy: the commands add a report and figures to it), measured by the
    command `make run` runs (perfsweep run CONFIG --cores N, tests/sweeps/ljmd.py); its report removed, so
    that `make run` here must write it again."""
    home = ljmd_sweep.copy(where / "user")
    (home.results / "report.html").unlink()
    home = home.work
    (home / ".venv").symlink_to(REPO / ".venv")
    (home / "resources").symlink_to(REPO / "resources")
    shutil.copy2(REPO / "Makefile", home / "Makefile")
    shutil.copy2(REPO / "pyproject.toml", home / "pyproject.toml")
    stamp = REPO / ".venv" / ".perfsweep-installed"
    assert stamp.exists(), "make setup first"
    os.utime(home / "pyproject.toml", (stamp.stat().st_mtime - 60,) * 2)  # set up: make run installs nothing
    (home / "config").mkdir()
    for path in (home / "config" / "config.yaml", home / "my.yaml"):
        shutil.copy2(home / "c.yaml", path)
    return home


def run(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", CORES="2")
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


ZIP_REPORT = ".venv/bin/perfsweep run my.yaml --cores 2 -- --report results/report.zip"


@session_sweep("docs-commands")
def documented_run(work, ljmd_sweep) -> tuple[Path, list]:
    """RUN in order in a user's directory (user_dir) in ``work``: (the directory, [(command, exit code,
    stdout, stderr, each model's figures before it)]). A session sweep (tests/sweeps/lane.py): the test
    lane runs the commands beside the other tests; nothing here asserts on a timing."""
    home, done = user_dir(ljmd_sweep, work), []
    for cmd in RUN:
        before = each_model_figure(home / "results")
        proc = run(cmd, home)
        done.append((cmd, proc.returncode, proc.stdout, proc.stderr, before))
    return home, done


@pytest.mark.slow
def test_documented_commands_run(documented_run):
    user_dir, done = documented_run
    results = user_dir / "results"
    out = {}
    for cmd, returncode, stdout, stderr, figures_before in done:
        if cmd == ZIP_REPORT:  # each model's figures: drawn only for a zip report (tests/test_report.py)
            assert figures_before == {}
        assert returncode == 0, (cmd, stdout[-3000:], stderr[-3000:])
        assert "Traceback" not in stderr, (cmd, stderr[-3000:])
        out[cmd] = stdout + stderr
    assert [cmd for cmd, *_ in done] == RUN
    # make run: the sweep of config/config.yaml (3 studies, 30 configurations x 2 repetitions) with its
    # models, and the report it wrote again
    records = [json.loads(p.read_text()) for p in results.glob("runs/*/*/rep*.json")]
    assert len(records) == 60 and all(r["status"] == "ok" for r in records)
    assert (results / "report.html").stat().st_size > 0
    assert "pip install" not in out["make run"]  # the venv was set up: nothing installed
    # validate and plan say what would be measured; the later runs of the same sweep measure nothing again
    assert "60 runs" in out[".venv/bin/perfsweep validate my.yaml"], out[".venv/bin/perfsweep validate my.yaml"]
    assert "60 runs (60 measured)" in out[".venv/bin/perfsweep plan my.yaml"], out[".venv/bin/perfsweep plan my.yaml"]
    assert len(list(results.glob("runs/*/*/rep*.json"))) == 60
    # the zip report carries each model's full-size figures, of every study, each drawn with its data
    assert (results / "report.zip").stat().st_size > 0
    assert sorted(each_model_figure(results)) == ["T_n_m", "T_n_m_c", "T_n_p"]
    with zipfile.ZipFile(results / "report.zip") as z:
        names = Counter(Path(n).name for n in z.namelist())
    assert names["report.html"] == 1 and names["model_sheet.png"] == 3
    # each model's figures of every study (the same names recur across studies, each stored once a study)
    wanted = Counter(name for figures in each_model_figure(results).values() for name in figures)
    assert wanted and all(names[name] >= k for name, k in wanted.items()), wanted - names
    for study in each_model_figure(results):
        # dtype: a constant model ("0.000276") would otherwise be read as a number
        models = pd.read_csv(results / "models" / study / "models.csv", dtype={"model": str})
        fitted = models[models["model"].fillna("").str.len() > 0]
        assert {"all", "step/forces"} <= set(fitted["region"])  # ljmd's nested regions are modeled too
        for metric, region in zip(fitted["metric"], fitted["region"]):
            for suffix in ("", "__vs_measurement"):
                png = results / "figures" / study / "models" / f"{metric}__{region.replace('/', '-')}{suffix}.png"
                assert len(assert_figure(png)) > 0, png  # decodes, shows something, its CSV has the data
    assert "n = 4000, p = 8: " in out[".venv/bin/perfsweep predict results/models/T_n_p/models.json n=4000 p=1,2,4,8"]
    assert pd.read_csv(user_dir / "models" / "mm" / "models.csv").shape[0] > 0
