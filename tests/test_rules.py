"""Every rule, its script and its stage function share one name, and every rule's log is perfsweep.layout's,
as docs/reference/outputs.md states it: its table "Where each stage writes" has one row per stage (stage,
what it writes, its log), and this file checks the table against workflow/rules/*.smk and the layout, so a
new rule that breaks either convention, or is missing from the table, fails here."""

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO
from perfsweep import layout

RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
OUTPUTS_DOC = REPO / "docs" / "reference" / "outputs.md"
# the rules that are not stages: the run of a benchmark (a shell command: python -m perfsweep.runner; with
# `bundle: repetitions` one rule run_<study> per study) and the targets of the Snakefile
RUN_RULES = {"run", "run_{_study.name}", "run_pack"}
TARGETS = {"all", "runs"}


@dataclass(frozen=True)
class Rule:
    name: str
    where: str  # file:line
    directives: dict[str, str]  # directive -> its text (the lines below it, stripped and joined)


def parse_rules(text: str, where: str = "") -> list[Rule]:
    """The rules of a Snakefile's text: name (an anonymous rule's ``name:``) and each directive's text."""
    lines = text.split("\n")
    rules = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)rule(?:\s+(\w+))?\s*:", line)
        if not m:
            continue
        indent = len(m.group(1))
        body = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            body.append(nxt)
        directives, current = {}, None
        step = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=indent + 4)
        for b in body:
            if not b.strip() or b.lstrip().startswith("#"):
                continue
            d = re.match(r"^(\w+):\s*(.*)$", b[step:]) if len(b) - len(b.lstrip()) == step else None
            if d:
                current = d.group(1)
                directives[current] = d.group(2).strip()
            elif current:
                directives[current] = (directives[current] + " " + b.strip()).strip()
        name = m.group(2) or re.sub(r'^f?"(.*)"$', r"\1", directives.get("name", "?"))
        rules.append(Rule(name, f"{where}:{i + 1}", directives))
    return rules


def workflow_rules() -> list[Rule]:
    return [r for f in RULE_FILES for r in parse_rules(f.read_text(), str(f.relative_to(REPO)))]


def naming_problems(rules: list[Rule], scripts_dir: Path = REPO / "scripts") -> list[str]:
    """What breaks "rule X runs scripts/X.py, which calls perfsweep.stages.X.run" (run rules and targets
    aside)."""
    problems = []
    for rule in rules:
        if rule.name in RUN_RULES | TARGETS:
            continue
        script = rule.directives.get("script")
        if script != f'"../../scripts/{rule.name}.py"':
            problems.append(f"{rule.where}: rule {rule.name} runs script {script}, not scripts/{rule.name}.py")
            continue
        text = (scripts_dir / f"{rule.name}.py").read_text()
        if (f"from perfsweep.stages import call, {rule.name}\n" not in text
                or f"\ncall(snakemake, {rule.name}.run)" not in text):
            problems.append(f"scripts/{rule.name}.py does not call perfsweep.stages.{rule.name}.run")
            continue
        run = getattr(importlib.import_module(f"perfsweep.stages.{rule.name}"), "run", None)
        if run is None or run.__module__ != f"perfsweep.stages.{rule.name}":
            problems.append(f"perfsweep.stages.{rule.name} defines no run of its own")
    return problems


def doc_table() -> dict[str, tuple[str, str]]:
    """{stage: (what it writes, its log)} of outputs.md's table "Where each stage writes"."""
    section = OUTPUTS_DOC.read_text().split("## Where each stage writes", 1)[1]
    rows = re.findall(r"^\| *([a-z_]+) *\| *(.+?) *\| *(.+?) *\|$", section, re.M)
    return {stage: (writes, log) for stage, writes, log in rows if stage != "stage"}


def stages() -> list[str]:
    return sorted(r.name for r in workflow_rules() if r.name not in RUN_RULES | TARGETS)


def test_the_parser_reads_every_rule_of_the_workflow():
    names = [r.name for r in workflow_rules()]
    assert len(names) == len(set(names)) == 21  # no name twice
    assert set(names) >= {"collect", "models", "report_pages_scaling", "failures_page", "all", *RUN_RULES}
    assert len(stages()) == 16, stages()


def test_every_rule_its_script_and_its_stage_share_one_name():
    assert naming_problems(workflow_rules()) == []
    # and nothing is left over: every script and every stage module is a rule's
    scripts = {p.stem for p in (REPO / "scripts").glob("*.py")}
    modules = {p.stem for p in (REPO / "src" / "perfsweep" / "stages").glob("*.py")} - {"__init__"}
    assert scripts == modules == set(stages())


def test_a_rule_that_breaks_the_naming_fails_the_check(tmp_path):
    (tmp_path / "collect.py").write_text("from perfsweep.stages import call, collect\n\ncall(snakemake, collect.run)\n")
    shared = parse_rules('rule collect_more:\n    input:\n        "a",\n    script:\n        "../../scripts/collect.py"\n')
    assert naming_problems(shared, tmp_path) == [":1: rule collect_more runs script \"../../scripts/collect.py\", "
                                                 "not scripts/collect_more.py"]
    (tmp_path / "figures.py").write_text("from perfsweep.stages import call, models\n\ncall(snakemake, models.run)\n")
    other = parse_rules('rule figures:\n    script:\n        "../../scripts/figures.py"\n')
    assert naming_problems(other, tmp_path) == ["scripts/figures.py does not call perfsweep.stages.figures.run"]
    shell = parse_rules('rule plot:\n    shell:\n        "python plot.py"\n')
    assert naming_problems(shell, tmp_path) == [":1: rule plot runs script None, not scripts/plot.py"]


def test_the_docs_table_has_one_row_per_stage_and_the_run():
    assert sorted(doc_table()) == sorted([*stages(), "run"])


def test_every_rule_logs_where_the_layout_and_the_docs_say():
    """A stage's rule logs to stage_log("<stage>") (common.smk: perfsweep.layout.stage_log), the run rules to
    layout.run_log / bundle_log; the docs' table names the same paths."""
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert re.search(r"^def stage_log\(stage\):\n    return layout\.stage_log\(R, stage\)$", common, re.M)
    table = doc_table()
    for rule in workflow_rules():
        if rule.name in TARGETS:
            assert "log" not in rule.directives, rule
            continue
        log = rule.directives.get("log")
        if rule.name == "run":
            assert log == 'layout.run_log(R, "{study}", "{config}", "{rep}"),', rule
        elif rule.name == "run_pack":
            assert log == 'layout.pack_log(R, "{pack}"),', rule
        elif rule.name in RUN_RULES:
            assert log == 'layout.bundle_log(R, _study.name, "{config}"),', rule
        else:
            assert log == f'stage_log("{rule.name}"),', rule
    for stage in stages():
        study = "<study>" if stage in layout.STAGES else "?"
        documented = re.findall(r"`([^`]+)`", table[stage][1])
        assert documented == [layout.stage_log("results", stage, study)], (stage, documented)
        expected = (f"results/logs/{stage}.log" if stage in layout.SWEEP_STAGES
                    else f"results/logs/{stage}/<study>.log")  # what the doc's prose says of every stage
        assert documented == [expected], stage
    assert re.findall(r"`([^`]+)`", table["run"][1]) == [layout.run_log("results", "<study>", "<config>", "<k>"),
                                                        layout.bundle_log("results", "<study>", "<config>"),
                                                        layout.pack_log("results", "<pack>")]
    prose = " ".join(OUTPUTS_DOC.read_text().split("## Where each stage writes", 1)[1].split("|", 1)[0].split())
    sweep_stages = re.search(r"for a stage of the whole sweep \(([^)]*)\)", prose).group(1)
    assert sorted(sweep_stages.split(", ")) == sorted(layout.SWEEP_STAGES)


def test_a_stage_without_a_place_in_the_layout_has_no_log():
    with pytest.raises(KeyError, match="no stage 'plot'"):
        layout.stage_log("results", "plot")


def test_every_job_snakemake_plans_logs_at_the_layouts_path(tmp_path):
    """The paths as Snakemake plans them (a dry run of every stage, the paper targets, a failures page and
    each model's figures included): each job's log is perfsweep.layout's."""
    import yaml

    from conftest import snakemake

    cfg = {"app": {"name": "ljmd", "args": {"steps": 4}}, "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
           "repetitions": 1, "studies": {"np": {"vary": {"n": [100, 200, 300], "p": [1, 2]}}}, "results": "results"}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    targets = ["all", "paper_hofinger", "paper_mdanalysis", layout.output("results", "failures_page", "failures", "np"),
               layout.output("results", "model_figures", "figures", "np")]
    plan = snakemake(*targets, "-n", "--configfile", "c.yaml", cwd=tmp_path).stdout
    jobs = re.findall(r"^rule (\w+):\n((?:    .*\n)*)", plan, re.M)
    logs = {}
    for rule, body in jobs:
        log = re.search(r"^    log: (\S+)$", body, re.M)
        wildcards = dict(re.findall(r"(\w+)=([^,\s]+)", (re.search(r"^    wildcards: (.*)$", body, re.M) or [""])[0]))
        logs.setdefault(rule, set()).add((log.group(1) if log else None, tuple(sorted(wildcards.items()))))
    assert set(logs) == {*stages(), "run", "all"}, sorted(logs)
    for rule, found in logs.items():
        for log, wildcards in found:
            w = dict(wildcards)
            if rule == "all":
                assert log is None
            elif rule == "run":
                assert log == layout.run_log("results", w["study"], w["config"], w["rep"])
            else:
                assert log == layout.stage_log("results", rule, w.get("study", "{study}")), (rule, log)
