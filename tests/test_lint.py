"""`snakemake --lint` (the workflow catalog's checks) finds nothing in the workflow."""

import re

import pytest

from conftest import REPO, snakemake

pytestmark = pytest.mark.slow

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
    assert found == [], text
    # Snakemake's whole output when it finds nothing to say
    assert text.strip() == "Congratulations, your workflow is in a good condition!" and proc.returncode == 0, text
