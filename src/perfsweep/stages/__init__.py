"""One module per pipeline stage, named like its rule and its script; each has a ``run`` function taking
file paths in and out (what scripts/*.py call through :func:`call`). Every rule with a ``script:`` is a
stage of that one name (tests/test_rules.py):

    stage (rule, scripts/<stage>.py, perfsweep.stages.<stage>.run)   results
    collect, variability, aggregate                                   tables/<study>/
    models, models_summary                                            models/<study>/, tables/
    figures, model_sheet, model_figures                               figures/<study>/
    overhead, metrics                                                 overhead/<study>/, metrics/<study>/
    paper_hofinger, paper_mdanalysis                                  paper/
    report_pages, report_pages_scaling, failures_page                 report/<study>/
    report_pages_summary                                              report/

Every ``run`` can also be used outside Snakemake, e.g. to re-aggregate records by hand::

    from perfsweep.stages import collect
    collect.run(glob.glob("results/runs/nm/*/*.json"), "runs.csv", "ranks.csv", "regions.csv")

The stages sit above the domain code (tables, modeling, metrics, overhead) and the figure code (plots/).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from perfsweep.errors import RuleMismatch, one_line_errors
from perfsweep.values import PathLike


def call(smk: Any, func: Callable[..., Any]) -> Any:
    """Run ``func`` with the named input, output and params of a Snakemake ``script:`` job (``smk`` is the
    script's ``snakemake`` object) and those of its wildcards that ``func`` names; stderr goes to the
    rule's log. Every named key must be a parameter of ``func`` and every parameter without a default
    must be given, else :class:`RuleMismatch`; a :class:`perfsweep.errors.UserError` becomes one line.
    A function with a parameter named ``input``, ``output`` or ``params`` gets that part's keys as one
    mapping instead (see :func:`bind`)."""
    if len(smk.log):
        sys.stderr = open(smk.log[0], "w")
    kwargs = bind(getattr(smk, "rule", "?"), func, {part: dict(getattr(smk, part).items())
                                                    for part in ("input", "output", "params")},
                  dict(smk.wildcards.items()))
    with one_line_errors():
        return func(**kwargs)


def bind(rule: str, func: Callable[..., Any], keys: dict[str, dict[str, Any]],
         wildcards: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments of ``func`` from a rule's keys (``{"input": {...}, "output": {...},
    "params": {...}}``); the wildcards fill only parameters of that name that no key fills. A parameter
    named like a part (``input``, ``output``, ``params``) takes that part's keys as one mapping, for a
    function whose keys vary by rule or repeat across parts (perfsweep.stages.report_pages: a page and
    a table may have the same name)."""
    sig = inspect.signature(func)
    where = f"{func.__module__}.{func.__qualname__}"
    kwargs: dict[str, Any] = {}
    for part, items in keys.items():
        if part in sig.parameters:
            if part in kwargs:
                raise RuleMismatch(f"rule {rule}: key {part!r} appears twice (as the {part} mapping and before it)")
            kwargs[part] = dict(items)
            continue
        for key, value in items.items():
            if key not in sig.parameters:
                raise RuleMismatch(f"rule {rule}: {part} key {key!r} is not a parameter of {where}"
                                   f" (parameters: {', '.join(sig.parameters)})")
            if key in kwargs:
                raise RuleMismatch(f"rule {rule}: key {key!r} appears twice (in {part} and before it)")
            kwargs[key] = value
    for key, value in (wildcards or {}).items():
        if key in sig.parameters and key not in kwargs:
            kwargs[key] = value
    missing = [n for n, p in sig.parameters.items() if n not in kwargs and p.default is p.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise RuleMismatch(f"rule {rule}: parameter {missing[0]!r} of {where} is given by no input, output,"
                           f" params or wildcard key (keys: {', '.join(k for v in keys.values() for k in v)})")
    return kwargs


def read(path: PathLike) -> pd.DataFrame:
    """A stage's CSV input; an empty file (a study without such rows) is an empty frame."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def stem(path: PathLike) -> str:
    """A table's path without suffix (tables.write_table writes .csv, .md and .tex beside each other)."""
    return str(Path(path).with_suffix(""))


def check_written(func: str, *paths: PathLike) -> None:
    """Fail loudly if a reproduction did not write a file its rule declares (the names drifted apart)."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise RuleMismatch(f"{func} did not write {', '.join(missing)}")
