"""Stage report_pages: a study's variability, measurements and models tables as HTML pages for the
Snakemake report (the report embeds HTML but offers a CSV only as a download). Its sibling stages
report_pages_scaling, report_pages_summary and failures_page write other pages the same way. A page is
often named like a table on it, so :func:`run` takes the rule's input and output as two mappings
(perfsweep.stages.bind)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from perfsweep import report
from perfsweep.values import PathLike


def run(input: Mapping[str, PathLike], output: Mapping[str, PathLike], pages: Mapping[str, list[str]],
        study: str | None = None) -> list[Path]:
    """One page per output key, with the input tables ``pages`` names for it (report.pages)."""
    return report.pages(input, output, pages, study=study)
