"""Stage report_pages_summary: the models summary over all studies as an HTML page for the Snakemake
report (as stage report_pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from perfsweep import report
from perfsweep.values import PathLike


def run(input: Mapping[str, PathLike], output: Mapping[str, PathLike], pages: Mapping[str, list[str]],
        study: str | None = None) -> list[Path]:
    """The page of the models summary (report.pages; no study: a page of the whole sweep)."""
    return report.pages(input, output, pages, study=study)
