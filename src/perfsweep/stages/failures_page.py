"""Stage failures_page: the runs of a study that did not get through, their status and error, as an
HTML page of the report `perfsweep run` writes despite the failure (as stage report_pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from perfsweep import report
from perfsweep.values import PathLike


def run(input: Mapping[str, PathLike], output: Mapping[str, PathLike], pages: Mapping[str, list[str]],
        study: str | None = None) -> list[Path]:
    """The page of the study's runs (report.pages)."""
    return report.pages(input, output, pages, study=study)
