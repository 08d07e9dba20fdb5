"""`snakemake --lint` (the workflow catalog's checks) finds nothing in the workflow."""

import re

import pytest

from conftest import REPO, snakemake

pytestmark = pytest.mark.slow

# The lints of workflow/rules/report.smk, which belongs to the report part of issue 14 (its rules get
# conda: ENV and its functions move to common.smk there); exactly these may remain until then.
REPORT_LINTS = {
    ("snakefile", "report.smk", "Mixed rules and functions in same snakefile."),
    *(("rule model_figures", "report.smk", "Specify a conda environment or container for each rule."),
      ("rule report_tables", "report.smk", "Specify a conda environment or container for each rule."),
      ("rule report_tables_scaling", "report.smk", "Specify a conda environment or container for each rule."),
      ("rule report_models_summary", "report.smk", "Specify a conda environment or container for each rule.")),
}


def lints(text: str) -> list[tuple[str, str, str]]:
    """(what, file, lint) per lint of `snakemake --lint`'s text output."""
    found, what, where = [], None, None
    for line in text.splitlines():
        head = re.match(r"Lints for (snakefile|rule \S+) .*?([^/]+\.smk|Snakefile)\)?:$", line)
        if head:
            what, where = head.groups()
        elif re.match(r"    \* ", line):
            found.append((what, where, line[6:].rstrip(":")))
    return found


def test_lint_prints_nothing(tmp_path):
    proc = snakemake("--lint", cwd=REPO, check=False)
    text = proc.stdout + proc.stderr
    found = lints(text)
    assert set(found) - REPORT_LINTS == set(), text
    if not found:  # nothing at all: not even a line outside the lints
        assert text.strip() == "" and proc.returncode == 0, text
