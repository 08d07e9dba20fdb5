"""The package's structure: no import cycles, imports at the top, one owner of the results tree
(perfsweep.layout), and the log a run's failure record names exists (also for bundled runs)."""

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
import yaml

from conftest import REPO, snakemake
from perfsweep import layout
from perfsweep.sweep.ended import ended_record
from perfsweep.sweep.spec import RunSpec

SRC = REPO / "src" / "perfsweep"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _enclosing_function(node: ast.AST, parents: dict) -> ast.AST | None:
    node = parents.get(node)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        node = parents.get(node)
    return node


def _imports(path: Path) -> list[tuple[ast.AST, list[str], bool]]:
    """(node, the modules it names, whether it is inside a function) of every import statement in a file,
    wherever it is (module level, under `if TYPE_CHECKING:`, inside functions)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]  # a name may be a submodule
        else:
            continue
        out.append((node, targets, _enclosing_function(node, parents) is not None))
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the perfsweep modules it imports (explicitly: not the parents Python imports on the way)."""
    return {name: {t for _, targets, _ in _imports(path) for t in targets if t in MODULES and t != name}
            for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_reads_every_kind_of_import(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    graph = import_graph()
    # an import at the top and a submodule by name (one under TYPE_CHECKING: the next test)
    assert "perfsweep.sweep.spec" in graph["perfsweep.sweep.run"]
    assert "perfsweep.layout" in graph["perfsweep.cli.records"]
    # `from perfsweep.plots import models as model_plots`: a submodule
    assert "perfsweep.plots.models" in graph["perfsweep.stages.model_sheet"]
    # one inside a function (apps.scorep reads a Score-P profile with the CUBE reader only when it has one)
    assert "perfsweep.cube" in graph["perfsweep.apps.scorep"]


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_pure_modules_import_no_sweep_machinery():
    """The arrows point down: the results tree, the errors, values and statistics import nothing of
    perfsweep's but each other; the design geometry not the config; the run's execution not the config."""
    graph = import_graph()

    def reach(name: str) -> set[str]:
        seen, todo = set(), [name]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    for pure in ("perfsweep.layout", "perfsweep.errors", "perfsweep.values", "perfsweep.stats"):
        assert reach(pure) <= {"perfsweep.layout", "perfsweep.errors", "perfsweep.values"}, pure
    assert "perfsweep.config" not in reach("perfsweep.sweep.designs")
    assert "perfsweep.config" not in reach("perfsweep.sweep.record")
    # the apps a run launches read their profiles with the CUBE reader below the modeler, not through it
    for app in (m for m in MODULES if m.startswith("perfsweep.apps.")):
        assert not {m for m in reach(app) if m.startswith("perfsweep.modeling")}, app
    # perfsweep compare sits above the modeler: the modeler imports nothing of it
    for modeler in (m for m in MODULES if m.startswith("perfsweep.modeling")):
        assert not {m for m in reach(modeler) if m.startswith("perfsweep.compare")}, modeler


@pytest.mark.parametrize("module", ["perfsweep.runner", "perfsweep.sweep.run"])
def test_the_runner_a_run_job_starts_loads_no_config_or_modeling_machinery(module):
    """`python -m perfsweep.runner` (the run rule's command, which runs perfsweep.sweep.run) starts once per
    run: it imports what executes a spec, not what builds one (config, designs: jsonschema, yaml, numpy),
    the front end (perfsweep.cli) or what fits models."""
    code = (f"import sys, {module}; print(' '.join(sorted(m for m in sys.modules if m.startswith("
            "('perfsweep', 'yaml', 'jsonschema', 'numpy', 'pandas', 'scipy')))))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=REPO).stdout.split())
    assert {"perfsweep.sweep.run", "perfsweep.sweep.spec", "perfsweep.sweep.ended"} <= loaded
    assert not loaded & {"perfsweep.config", "perfsweep.sweep.designs", "perfsweep.steps.estimate",
                         "perfsweep.cli", "perfsweep.modeling", "yaml", "jsonschema", "numpy", "pandas",
                         "scipy"}, loaded


def test_the_run_rule_starts_the_runner_by_the_command_its_records_were_made_with():
    """Snakemake stores the run rule's shell command with every record and measures a record again when the
    text changes ("Code has changed"): the command stays `python -m perfsweep.runner`, an entry point that
    runs perfsweep.sweep.run and that nothing imports."""
    rules = (REPO / "workflow" / "rules" / "run.smk").read_text()
    assert rules.count("-m perfsweep.runner ") == 3  # a run, a bundle, a pack
    assert not [m for m, deps in import_graph().items() if "perfsweep.runner" in deps]


def test_nothing_below_the_front_end_imports_it():
    """perfsweep.cli translates arguments into calls of the package: the arrows point from it, never to it."""
    graph = import_graph()
    up = sorted(f"{m} -> {d}" for m, deps in graph.items() if not m.startswith("perfsweep.cli")
                for d in deps if d == "perfsweep.cli" or d.startswith("perfsweep.cli."))
    assert up == []


# ---- rooms of one role, in layers: every import runs down (or within its layer), never up

# The layers from the bottom (docs/explanation/architecture.md, "The package's rooms"). A module belongs
# to the layer of its longest matching prefix; the package's __init__ files that hold only a docstring
# belong to the base.
LAYERS = (
    ("base", ("perfsweep", "atomic", "layout", "errors", "values", "stats", "tidy")),
    ("run", ("apps", "cube", "cluster", "runner", "sweep")),
    ("config", ("config", "config_fields", "config_doc")),
    ("analysis", ("modeling", "tables", "metrics", "overhead", "report", "report_check")),
    ("steps", ("steps",)),
    ("views", ("compare", "history", "plots", "reproduce")),
    ("stages", ("stages",)),
    ("front end", ("cli",)),
)


def layer_of(module: str) -> int | None:
    name = module.removeprefix("perfsweep.") if module != "perfsweep" else "perfsweep"
    found = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
             if name == prefix or name.startswith(prefix + ".")]
    return max(found)[1] if found else None


def _runtime_imports(path: Path) -> set[str]:
    """The perfsweep modules a file imports when it runs (not those under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    skip = {n.lineno for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
            for child in node.body for n in ast.walk(child) if hasattr(n, "lineno")}
    return {t for node, targets, _ in _imports(path) if node.lineno not in skip for t in targets if t in MODULES}


def test_every_import_runs_down_the_layers():
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert unplaced == [], f"modules in no layer (add them to LAYERS and to architecture.md): {unplaced}"
    up = sorted(f"{m} ({LAYERS[layer_of(m)][0]}) -> {d} ({LAYERS[layer_of(d)][0]})"
                for m, path in MODULES.items() for d in _runtime_imports(path) if layer_of(d) > layer_of(m))
    assert up == []


def test_the_layer_check_sees_an_import_up_and_ignores_annotations_only(tmp_path, monkeypatch):
    assert layer_of("perfsweep.steps.rounds") > layer_of("perfsweep.modeling.fit") > layer_of("perfsweep.sweep.run")
    assert layer_of("perfsweep.cli.compare") > layer_of("perfsweep.compare.judge") > layer_of("perfsweep.modeling")
    assert "perfsweep.sweep.spec" in _runtime_imports(MODULES["perfsweep.sweep.run"])
    # a module that names the config in its annotations only (under TYPE_CHECKING): no run-time arrow up
    (tmp_path / "perfsweep").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path / "perfsweep")
    module = tmp_path / "perfsweep" / "annotated.py"
    module.write_text("from typing import TYPE_CHECKING\nfrom perfsweep import layout\nif TYPE_CHECKING:\n"
                      "    from perfsweep.config import SweepConfig\n")
    assert "perfsweep.config" in {t for _, targets, _ in _imports(module) for t in targets}  # read ...
    assert _runtime_imports(module) == {"perfsweep", "perfsweep.layout"}  # ... and no arrow at run time


# A room a reader can hold in mind (issue 42): lines from a definition's first line to its last.
LIMITS = {"module": 600, "class": 300, "function": 80}


def oversized(path: Path) -> list[str]:
    text = path.read_text()
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    out = [f"{where}: {len(text.splitlines())} lines"] if len(text.splitlines()) > LIMITS["module"] else []
    for node in ast.walk(ast.parse(text)):
        kind = ("class" if isinstance(node, ast.ClassDef) else
                "function" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
        if kind and node.end_lineno - node.lineno + 1 > LIMITS[kind]:
            out.append(f"{where}:{node.lineno}: {kind} {node.name}, {node.end_lineno - node.lineno + 1} lines")
    return out


def test_no_module_class_or_function_is_larger_than_a_reader_can_hold():
    assert [line for path in MODULES.values() for line in oversized(path)] == []


def test_the_size_check_counts_a_long_function_and_class(tmp_path):
    lines = "".join(f"        x{i} = {i}\n" for i in range(80))
    (tmp_path / "long.py").write_text(f"class C:\n    def f(self):\n{lines}\n\ndef g():\n    return 1\n")
    assert oversized(tmp_path / "long.py") == ["long.py:2: function f, 81 lines"]
    (tmp_path / "big.py").write_text("class D:\n" + "".join(f"    y{i} = {i}\n" for i in range(300)))
    assert oversized(tmp_path / "big.py") == ["big.py:1: class D, 301 lines"]


def test_the_front_end_is_one_package():
    """Every subcommand of `perfsweep` is parsed in perfsweep.cli (an app's own options stay with the app);
    compare's logic is a package of its own, not the modeler's."""
    parsers = sorted(str(p.relative_to(REPO)) for p in MODULES.values()
                     if re.search(r"\.add_parser\(|\.add_subparsers\(", p.read_text())
                     and not p.is_relative_to(SRC / "cli"))
    assert parsers == []
    assert {"perfsweep.compare.judge", "perfsweep.compare.load", "perfsweep.compare.render",
            "perfsweep.compare.page", "perfsweep.compare.statistics", "perfsweep.cli.compare"} <= set(MODULES)
    assert not [m for m in MODULES if m.startswith("perfsweep.modeling.") and "sweep_compare" in m]


# Function-level imports: only of a heavy or optional dependency, each with its reason in a comment on
# its line (or the line above). The standard library and these light dependencies are imported at the top.
LIGHT = {"yaml", "jsonschema"}


def test_imports_inside_functions_are_heavy_or_optional_and_say_why():
    bad = []
    for name, path in MODULES.items():
        lines = path.read_text().splitlines()
        for node, targets, inside in _imports(path):
            if not inside:
                continue
            top = targets[0].split(".")[0]
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            around = lines[node.lineno - 2:node.end_lineno]
            if top in sys.stdlib_module_names or top in LIGHT:
                bad.append(f"{where}: {targets[0]} is light: import it at the top")
            elif not any("#" in line for line in around):
                bad.append(f"{where}: {targets[0]} inside a function without a comment saying why")
    assert bad == []


# ---- one owner of the results tree

# A results path spelled outside perfsweep.layout: a folder of the tree followed by a slash ("{R}/runs/",
# "tables/"; not the workflow's own report/ folder of captions), a record's name ("rep{k}.json"), a file name
# the layout declares ("pop.csv", "points.json"), or a folder of the tree joined as a Path (`x / "runs"`).
# Module, class and function docstrings and comments may describe the tree; a string that names a file in
# another folder says so on its line ("not the results tree").
FOLDERS = ("runs", "archive", "bundles", "plan", "logs", "tables", "figures", "models", "metrics", "overhead",
           "report", "paper", "quarantine", "superseded")
FOLDER_PATH = re.compile(r"(?<!\.\./)(?<!workflow/)(?<![\w.-])(%s)/|/(%s)$" % ("|".join(FOLDERS), "|".join(FOLDERS)))
RECORD_NAME = re.compile(r"rep(\{[^}]*\}|\d+|\*|<k>)\.json")
EXEMPT = "not the results tree"


def declared_names() -> set[str]:
    names = {Path(n).name for _, files in layout.STAGES.values() for n in files.values()}
    names |= {n for _, files in layout.PAPERS.values() for n in files.values()}
    names |= {layout.POINTS_FILE, layout.REPETITIONS_FILE, Path(layout.report_html("r")).name}
    return names - set(FOLDERS)  # "models" (each model's figures): a folder, caught as one


def path_spellings(text: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, string) of every string literal in Python or Snakemake source that spells a results path."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines()
    found = []
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.STRING:
            continue
        before = next((t for t in reversed(tokens[:i]) if t.type not in (tokenize.NL, tokenize.COMMENT)), None)
        if before is None or before.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue  # a docstring (a string that is a statement of its own)
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        value = re.sub(r"^[rbfuRBFU]*('''|\"\"\"|'|\")(.*)\1$", r"\2", tok.string, flags=re.S)
        joined = (before.string == "/" or (after is not None and after.string == "/")) and value in FOLDERS
        if (FOLDER_PATH.search(value) or RECORD_NAME.search(value) or value in names or joined) \
                and EXEMPT not in lines[tok.start[0] - 1]:
            found.append((tok.start[0], value))
    return found


def test_the_scan_finds_the_spellings_the_layout_replaced():
    names = declared_names()
    old = '''
def get_run_records(wildcards):
    """Every run record of one study: <results>/runs/<study>/<config>/rep<k>.json."""
    return [f"{R}/runs/{s}/{c}/rep{k}.json" for k in range(3)]  # rule run's output: runs/...
manifest = Path(results) / "bundles" / study / f"{config_id}.txt"
log = f"{R}/logs/collect/{{study}}.log"
pop = out / "pop.csv"
state = plan_file(results, study, "points.json")
caption = "../report/pop.rst"
'''
    assert [line for line, _ in path_spellings(old, names)] == [4, 5, 6, 7, 8]


def test_no_file_but_the_layout_spells_a_results_path():
    files = [p for p in SRC.rglob("*.py") if p != SRC / "layout.py"]
    files += sorted((REPO / "scripts").glob("*.py")) + sorted((REPO / "workflow").rglob("*.smk"))
    files += sorted((REPO / "workflow").rglob("*.py")) + [REPO / "Snakefile"]
    names = declared_names()
    found = [f"{p.relative_to(REPO)}:{line}: {value!r}" for p in files for line, value in path_spellings(p.read_text(), names)]
    assert len(files) > 60 and found == []


def test_the_layout_keeps_the_paths_of_existing_results_trees():
    """Users' results trees stay recognised: the paths are those the workflow has always written."""
    assert layout.record("results", "nm", "n=200_m=1", 3) == "results/runs/nm/n=200_m=1/rep3.json"
    assert layout.archive_dir("results", "nm", "n=1") == "results/archive/nm/n=1"
    assert layout.bundle_manifest("r", "nm", "n=1") == "r/bundles/nm/n=1.txt"
    assert layout.run_log("r", "{study}", "{config}", "{rep}") == "r/logs/runs/{study}/{config}/rep{rep}.log"
    assert layout.bundle_log("r", "nm", "n=1") == "r/logs/runs/nm/n=1.log"
    assert str(layout.plan_file("r", "nm", layout.POINTS_FILE)) == "r/plan/nm/points.json"
    assert layout.stage_outputs("r", "metrics", "nm")["pop_csv"] == "r/metrics/nm/pop.csv"
    assert layout.stage_log("r", "collect", "nm") == "r/logs/collect/nm.log"
    assert layout.stage_log("r", "models_summary") == "r/logs/models_summary.log"
    assert layout.stage_outputs("r", "paper_hofinger")["top"] == "r/paper/hofinger2018/top_triples.csv"
    assert layout.parse_record("r/runs/nm/n=1_m=2/rep4.json") == {
        "results": Path("r"), "study": "nm", "config_id": "n=1_m=2", "repetition": 4}


def test_a_figure_and_a_table_of_one_stage_never_share_a_file():
    """pop.png's plotted data went to pop.csv, the POP table, which was right only because the table was
    written after the figure; now the figure's data has a name of its own."""
    assert layout.figure_data("r/metrics/nm/pop.png") == Path("r/metrics/nm/pop_figure.csv")
    assert layout.figure_data("r/figures/nm/grid.png") == Path("r/figures/nm/grid.csv")  # as before
    assert layout.figure_data("r/figures/nm/variability.png") == Path("r/figures/nm/variability.csv")
    for stage, (folder, files) in layout.STAGES.items():
        for name in files.values():
            if name.endswith(".png"):
                data = layout.figure_data(f"r/{folder}/nm/{name}").name
                assert all(data != other for _, (f, o) in layout.STAGES.items() if f == folder
                           for other in o.values()), (stage, name)


# ---- the log a run's failure record names exists


@pytest.mark.parametrize("bundled", [False, True])
def test_a_failure_record_names_the_log_the_workflow_gives_its_job(tmp_path, monkeypatch, bundled):
    """The record of a run whose runner was killed (SIGKILL: no record, no archived attempt) points to
    the log of its job, as the real Snakemake plans it: rule run's log for a run of its own, the bundle's
    log with `bundle: repetitions` (that record named logs/runs/<study>/<config>/rep<k>.log, which a
    bundle never writes)."""
    results = tmp_path / "results"
    cfg = {"app": {"command": "{launcher} /bin/echo time 1 {n}", "time_pattern": "time ([0-9.]+)"},
           "parameters": {"n": 1}, "studies": {"s": {"vary": {"n": [1, 2]}}}, "repetitions": 2,
           "results": str(results), **({"bundle": "repetitions"} if bundled else {})}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    plan = snakemake("-n", "--configfile", tmp_path / "c.yaml", cwd=tmp_path).stdout
    jobs = re.findall(r"^rule (run\S*):\n(?:    .*\n)*?    log: (\S+)", plan, re.MULTILINE)
    assert len(jobs) == (2 if bundled else 4), plan
    logs = {Path(log) for _, log in jobs}
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    spec = RunSpec("s", "n=2", 1, {"n": 2, "p": 1}, ["./app"], 60.0, layout.archive_dir(results, "s", "n=2"))
    record = ended_record(spec, layout.record(results, "s", "n=2", 1), attempt=2, bundled=bundled)
    named = Path(re.search(r"\(see (\S+)\)", record["error"]).group(1))
    assert named in logs, (record["error"], logs)
