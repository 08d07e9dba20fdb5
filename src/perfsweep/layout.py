"""The results tree: every path under ``<results>/`` (config key ``results:``) is named here, and only here.

The workflow's rules (workflow/rules/*.smk) and the package ask this module for a path; no other file
spells one (tests/test_house.py checks that). A path is a string built by joining with ``/``, so that the
rules' wildcards (``"{study}"``) pass through and a path is the same text wherever it is asked for::

    <results>/
      runs/<study>/<config>/rep<k>.json          raw run records (never rewritten; perfsweep.sweep.record)
      archive/<study>/<config>/rep<k>.attempt<a>.<time>.json   every attempt's copy
      bundles/<study>/<config>.txt               with bundle: repetitions, the bundle job's manifest
      packs/plan.json, packs/<pack>.json, .txt   with bundle: packs, which run is in which pack, a pack's
                                                 runs (its runner reads them) and its job's manifest
      plan/<study>/points.json, repetitions.json state of adaptive rounds (perfsweep.sweep.plan)
      plan/<study>/order.json                    the runs' random order in each round (perfsweep.sweep.order)
      plan/variants.json                         with variants (paired measurement): their names, in order
      quarantine/<time>/..., superseded/<time>/...   damaged records, records of another launch
      logs/runs/<study>/<config>/rep<k>.log      a run's log (every attempt's stderr)
      logs/runs/<study>/<config>.log             a bundled configuration's log (bundle: repetitions)
      logs/packs/<pack>.log                      a pack's log (bundle: packs)
      logs/sbatch.log                            on SLURM: submissions refused and tried again
      logs/<stage>/<study>.log                   a stage's log (stage_log); logs/<stage>.log of a stage of the sweep
      tables/, models/, figures/, metrics/, overhead/, report/, paper/   the stages' outputs (STAGES)
      report.html                                the report ``perfsweep run`` writes
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from perfsweep.values import PathLike

RUNS, ARCHIVE, BUNDLES, PLAN, LOGS = "runs", "archive", "bundles", "plan", "logs"
PACKS = "packs"
QUARANTINE, SUPERSEDED = "quarantine", "superseded"  # folders of set-aside files (perfsweep.sweep.record.set_aside)
POINTS_FILE, REPETITIONS_FILE = "points.json", "repetitions.json"  # plan state (perfsweep.sweep.plan)
DECIDE_FILE = "decide.json"  # measuring until decided: its runs, points and why it ended (perfsweep.steps.decide)
ORDER_FILE = "order.json"  # each run's place in its round's random order (perfsweep.sweep.order)
_RECORD = re.compile(r"rep(\d+)\.json")
_ARCHIVED = re.compile(r"rep\d+\.attempt\d+\..+\.json")
LEFTOVER_GLOB = ".rep*.json.*.tmp"  # perfsweep.atomic.atomic_file's temporary file of a record (or its copy)

Results = PathLike  # a results directory
REPO_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (an installed package has none)


# ---- paired measurement: a variant's study is <study>@<variant> (config key variants:)

VARIANT_SEP = "@"


VARIANTS_FILE = "variants.json"  # <results>/plan/variants.json: the config's variants, in its order


def variants_file(results: Results) -> Path:
    """Where a results tree names its variants (perfsweep.sweep.order.write_variants), in the config's order."""
    return Path(results) / PLAN / VARIANTS_FILE


def variant_study(study: str, variant: str) -> str:
    """The name of ``study``'s study for ``variant``: its records, tables and models live under it."""
    return f"{study}{VARIANT_SEP}{variant}"


def split_variant(study: str) -> tuple[str, str | None]:
    """(the config's study, the variant) of a study name; (name, None) for a study without variants."""
    base, sep, variant = study.partition(VARIANT_SEP)
    return (base, variant) if sep else (study, None)


# ---- run records and what belongs to them

def record(results: Results, study: str, config_id: str, repetition: int | str) -> str:
    """A run record: ``<results>/runs/<study>/<config>/rep<k>.json`` (wildcards pass through)."""
    return f"{results}/{RUNS}/{study}/{config_id}/rep{repetition}.json"


def runs_dir(results: Results, study: str | None = None) -> Path:
    """``<results>/runs`` or one study's records ``<results>/runs/<study>``."""
    return Path(results) / RUNS / study if study else Path(results) / RUNS


def study_record_paths(results: Results, study: str) -> list[tuple[Path, str, int]]:
    """(path, config id, repetition) of every run record of ``study`` on disk, in path order."""
    out = []
    for path in sorted(runs_dir(results, study).glob("*/rep*.json")):
        m = _RECORD.fullmatch(path.name)
        if m:
            out.append((path, path.parent.name, int(m.group(1))))
    return out


def record_glob() -> str:
    """The glob of run records (and archived attempts) below a directory of them (perfsweep check-records)."""
    return "rep*.json"


def parse_record(path: Results) -> dict[str, Any]:
    """What a record's path ``<results>/runs/<study>/<config>/rep<k>.json`` says: ``results``, ``study``,
    ``config_id``, ``repetition``; empty where the path does not have that form."""
    path = Path(path)
    m = _RECORD.fullmatch(path.name)
    if not m or len(path.parts) < 4 or path.parts[-4] != RUNS:
        return {}
    return {"results": path.parents[3], "study": path.parts[-3], "config_id": path.parent.name,
            "repetition": int(m.group(1))}


def archive_dir(results: Results, study: str, config_id: str) -> str:
    """Where every attempt of a configuration's runs is kept (part of a run's spec: the text must not change)."""
    return str(Path(results) / ARCHIVE / study / config_id)


def archive_name(repetition: int, attempt: int, stamp: str = "*") -> str:
    """The name of an attempt's copy in archive_dir (``*``: a glob of them)."""
    return f"rep{repetition}.attempt{attempt}.{stamp}.json"


def is_archived(path: Results) -> bool:
    """Whether ``path`` is named as archive_name names an attempt's copy."""
    return _ARCHIVED.fullmatch(Path(path).name) is not None


def record_lock(record_path: Results) -> Path:
    """The lock a runner holds while it produces a record (a hidden file beside it)."""
    path = Path(record_path)
    return path.with_name(f".{path.name}.lock")


def leftover_temps(results: Results) -> list[tuple[Path, str]]:
    """(file, the record it was to become) of every temporary file of a record's write (also of an archived
    copy) under ``runs/`` and ``archive/`` that a crash left between its creation and its rename."""
    out = []
    for folder in (RUNS, ARCHIVE):
        root = Path(results) / folder
        for tmp in sorted(p for p in root.rglob(LEFTOVER_GLOB) if p.is_file()):
            rep = tmp.name[1:].split(".", 1)[0]  # rep<k>
            out.append((tmp, str(Path(results) / RUNS / tmp.parent.relative_to(root) / f"{rep}.json")))
    return out


def bundle_manifest(results: Results, study: str, config_id: str) -> str:
    """With ``bundle: repetitions``: the bundle job's one output, listing its records."""
    return f"{results}/{BUNDLES}/{study}/{config_id}.txt"


def packs_plan(results: Results) -> Path:
    """With ``bundle: packs``: which run is in which pack (perfsweep.sweep.packs.write_plan)."""
    return Path(results) / PACKS / "plan.json"


def pack_file(results: Results, pack: str) -> str:
    """With ``bundle: packs``: a pack's runs, their specs and records (its runner reads it)."""
    return f"{results}/{PACKS}/{pack}.json"


def pack_manifest(results: Results, pack: str) -> str:
    """With ``bundle: packs``: the pack job's one output, listing its records."""
    return f"{results}/{PACKS}/{pack}.txt"


def pack_log(results: Results, pack: str) -> str:
    """The log of a pack's job (every attempt's stderr)."""
    return f"{results}/{LOGS}/{PACKS}/{pack}.log"


def run_log(results: Results, study: str, config_id: str, repetition: int | str) -> str:
    """The log of one run (rule run: every attempt's stderr)."""
    return f"{results}/{LOGS}/{RUNS}/{study}/{config_id}/rep{repetition}.log"


def bundle_log(results: Results, study: str, config_id: str) -> str:
    """The log of a bundled configuration's runs (``bundle: repetitions``: one job, one log)."""
    return f"{results}/{LOGS}/{RUNS}/{study}/{config_id}.log"


def log_of_record(record_path: Results, bundled: bool) -> Path | None:
    """The log of the job that makes the record ``record_path``: its run's, or with ``bundled`` its
    bundle's; None for a path that is not a record's in a results tree."""
    f = parse_record(record_path)
    if not f:
        return None
    if bundled:
        return Path(bundle_log(f["results"], f["study"], f["config_id"]))
    return Path(run_log(f["results"], f["study"], f["config_id"], f["repetition"]))


def submit_log(results: Results) -> str:
    """Where perfsweep's sbatch notes the submissions SLURM refused and it tried again (perfsweep.cluster.sbatch_retry)."""
    return f"{results}/{LOGS}/sbatch.log"


def logs_dir(results: Results) -> str:
    return f"{results}/{LOGS}/"


# ---- state of earlier rounds, set-aside files

def plan_file(results: Results, study: str, name: str) -> Path:
    """A state file of adaptive rounds: ``<results>/plan/<study>/<name>``."""
    return Path(results) / PLAN / study / name


def set_aside_target(results: Results, folder: str, stamp: str, rel: Path) -> Path:
    """Where a file set aside goes: ``<results>/<folder>/<stamp>/<its path under results>``."""
    return Path(results) / folder / stamp / rel


def set_aside_dir(results: Results, folder: str, stamp: str) -> Path:
    return Path(results) / folder / stamp


def named(folder: str) -> str:
    """A folder of the tree as messages name it, whatever the config's results: is (``results/runs/``)."""
    return f"results/{folder}/"


# ---- the stages' outputs: stage -> (folder, {output key: file name}); per study under <folder>/<study>/

STAGES: dict[str, tuple[str, dict[str, str]]] = {
    "collect": ("tables", {"runs": "runs.csv", "ranks": "ranks.csv", "regions": "regions.csv"}),
    "variability": ("tables", {"table": "variability.csv", "summary": "variability_summary.csv",
                               "order": "run_order.csv"}),
    "aggregate": ("tables", {"aggregate": "aggregate.csv", "medians": "medians.csv"}),
    "models": ("models", {"table": "models.csv", "models_json": "models.json", "predictions": "predictions.csv",
                          "validation": "validation.csv"}),
    "figures": ("figures", {"time_vs_parameters": "time_vs_parameters.png", "grid": "grid.png",
                            "variability_figure": "variability.png", "model": "model.png",
                            "model_vs_measurement": "model_vs_measurement.png"}),
    "model_sheet": ("figures", {"sheet": "model_sheet.png"}),
    "model_figures": ("figures", {"figures": "models"}),  # a directory: one PNG per model
    "metrics": ("metrics", {"observables": "observables.csv", "scaling": "scaling.csv", "pop_csv": "pop.csv",
                            "pop_spread": "pop_spread.csv", "pop_figure": "pop.png",
                            "speedup_figure": "speedup_efficiency.png", "ranks_figure": "ranks.png"}),
    "overhead": ("overhead", {"fits": "fits.csv", "curves": "curves.csv", "figure": "overhead.png"}),
    "report_pages": ("report", {"variability": "variability.html", "measurements": "measurements.html",
                                "models": "models.html"}),
    "report_pages_scaling": ("report", {"scaling": "scaling.html", "efficiency": "efficiency.html"}),
    "failures_page": ("report", {"failures": "failures.html"}),
}
# the reproductions of published studies: stage -> (folder under <results>/paper/, {key: file name}); the
# rule declares the keys of PAPER_OUTPUTS, the reproduction writes every file (perfsweep.reproduce)
PAPERS: dict[str, tuple[str, dict[str, str]]] = {
    "paper_mdanalysis": ("mdanalysis-rmsd", {"scaling": "scaling.csv", "figure": "speedup_efficiency.png",
                                             "components": "components.png", "ranks": "ranks.csv",
                                             "runs": "runs.csv", "rank_bars": "ranks_N{n}.png"}),
    "paper_hofinger": ("hofinger2018", {"note": "NOTE.md", "fits": "fits.csv", "triples": "triples.csv",
                                        "top": "top_triples.csv", "overhead": "overhead.csv",
                                        "figure": "fig2_overhead.png"}),
}
PAPER_OUTPUTS = {"paper_mdanalysis": ("scaling", "figure", "components"),
                 "paper_hofinger": ("note", "fits", "triples", "top", "overhead", "figure")}
# the sweep's outputs that belong to no study: stage -> {output key: path under <results>}
SWEEP_STAGES: dict[str, dict[str, str]] = {
    "models_summary": {"summary": "tables/models_summary.csv"},
    "report_pages_summary": {"models_summary": "report/models_summary.html"},
    **{stage: {key: f"paper/{folder}/{names[key]}" for key in PAPER_OUTPUTS[stage]}
       for stage, (folder, names) in PAPERS.items()},
}
# A figure's plotted data is written beside it as CSV (plots.style.save_figure): <stem>.csv, except where
# that name is a table of the same stage; then it is <stem>_figure.csv (metrics: pop.png's data beside the
# POP table pop.csv, which it overwrote before, correct only because the table was written after it).
FIGURE_DATA_SUFFIX = "_figure"


def stage_outputs(results: Results, stage: str, study: str = "{study}") -> dict[str, str]:
    """Every output of a stage: for one study (``"{study}"``: the rule's wildcard), or the sweep's own."""
    if stage in SWEEP_STAGES:
        return {key: f"{results}/{rel}" for key, rel in SWEEP_STAGES[stage].items()}
    folder, names = STAGES[stage]
    return {key: f"{results}/{folder}/{study}/{name}" for key, name in names.items()}


def output(results: Results, stage: str, key: str, study: str = "{study}") -> str:
    """One output of a stage (see stage_outputs)."""
    return stage_outputs(results, stage, study)[key]


def paper_file(out_dir: Results, stage: str, key: str, **values: Any) -> Path:
    """A file a reproduction (perfsweep.reproduce) writes into its folder ``out_dir`` (its rule's
    outputs' folder); ``values`` fill a name's fields (``ranks_N{n}.png``)."""
    return Path(out_dir) / PAPERS[stage][1][key].format(**values)


def file_name(stage: str, key: str) -> str:
    """The name of one of a stage's files (e.g. models.json), wherever it is."""
    return STAGES[stage][1][key]


def pattern(stage: str, key: str) -> str:
    """A study's output as messages name it: ``models/<study>/models.json``."""
    folder, names = STAGES[stage]
    return f"{folder}/<study>/{names[key]}"


def models_dir(results: Results) -> Path:
    return Path(results) / STAGES["models"][0]


def study_models(results: Results) -> dict[str, tuple[Path, Path]]:
    """{study: (its models.json, its aggregate table)} of every study with models in a results tree."""
    out = {}
    for path in sorted(models_dir(results).glob(f"*/{file_name('models', 'models_json')}")):
        study = path.parent.name
        out[study] = (path, Path(output(results, "aggregate", "aggregate", study)))
    return out


def stage_log(results: Results, stage: str, study: str = "{study}") -> str:
    """The log of a stage's job, the one ``log:`` of its rule: ``<results>/logs/<stage>/<study>.log`` for a
    stage of one study (STAGES), ``<results>/logs/<stage>.log`` for a stage of the whole sweep
    (SWEEP_STAGES: models_summary, report_pages_summary, the paper reproductions)."""
    if stage in SWEEP_STAGES:
        return f"{results}/{LOGS}/{stage}.log"
    if stage not in STAGES:
        raise KeyError(f"no stage {stage!r} in perfsweep.layout.STAGES or SWEEP_STAGES")
    return f"{results}/{LOGS}/{stage}/{study}.log"


def figure_data(figure: Results) -> Path:
    """The CSV of a figure's plotted data, beside it: never a table a stage declares in that folder."""
    path = Path(figure)
    data = path.with_suffix(".csv")
    folder = path.parent.parent.name
    tables = {name for f, names in STAGES.values() if f == folder for name in names.values()}
    tables |= {name for f, names in PAPERS.values() if f == path.parent.name for name in names.values()}
    return path.with_name(f"{path.stem}{FIGURE_DATA_SUFFIX}.csv") if data.name in tables else data


def final_outputs(results: Results, study: str, varies_processes: bool) -> list[str]:
    """What the workflow makes of a study (one file per stage; `rule all` asks for them)."""
    out = [output(results, "collect", "runs", study), output(results, "variability", "table", study),
           output(results, "aggregate", "medians", study),
           *(output(results, "figures", key, study) for key in ("time_vs_parameters", "grid", "model_vs_measurement")),
           output(results, "models", "table", study)]
    if varies_processes:
        out += [output(results, "overhead", "figure", study), output(results, "metrics", "pop_figure", study)]
    return out


def report_outputs(results: Results, study: str, varies_processes: bool, each_model: bool = False) -> list[str]:
    """The report's extra content for a study (workflow/rules/report.smk): the sheet of every model, the
    tables as HTML pages and, if ``each_model`` (for a zip report), each model's figures."""
    out = [output(results, "model_sheet", "sheet", study), *stage_outputs(results, "report_pages", study).values()]
    out += [output(results, "model_figures", "figures", study)] if each_model else []
    if varies_processes:
        out += list(stage_outputs(results, "report_pages_scaling", study).values())
    return out


def report_html(results: Results) -> str:
    """The HTML report ``perfsweep run`` writes."""
    return str(Path(results) / "report.html")
