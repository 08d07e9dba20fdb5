"""Stage report_pages_scaling: the scaling (speed-up, overhead fits) and efficiency (POP) tables of a
study that varies the number of processes, as HTML pages for the Snakemake report (as stage report_pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from perfsweep import report
from perfsweep.values import PathLike


def run(input: Mapping[str, PathLike], output: Mapping[str, PathLike], pages: Mapping[str, list[str]],
        study: str | None = None) -> list[Path]:
    """One page per output key, with the input tables ``pages`` names for it (report.pages)."""
    return report.pages(input, output, pages, study=study)
