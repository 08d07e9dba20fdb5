import os
import sys

from perfsweep.config import ConfigError, load_config, load_config_file
from perfsweep.runner import RunSpec

PYTHON = sys.executable

# the embedded default, found beside the Snakefile wherever Snakemake is started from
DEFAULT_CONFIG = os.path.relpath(os.path.join(workflow.basedir, "config", "config.yaml"))


def _load_sweep():
    """The validated sweep: --configfile if given (else config/config.yaml), --config on top."""
    files = [os.path.relpath(f) for f in (workflow.overwrite_configfiles or [])]
    try:
        if files:
            return load_config(dict(config), source=", ".join(files))
        base = load_config_file(DEFAULT_CONFIG).raw
        base.update(config)  # --config key=value overrides
        return load_config(base, source=DEFAULT_CONFIG)
    except ConfigError as exc:
        sys.stderr.write(f"perfsweep: config error: {exc}\n")
        sys.exit(2)


SWEEP = _load_sweep()
R = SWEEP.results
STUDIES = {s.name: s for s in SWEEP.studies}
CONFIGS = {(s.name, c.config_id): c for s in SWEEP.studies for c in s.configurations()}


wildcard_constraints:
    study="|".join(STUDIES),
    config="[^/]+",
    rep=r"\d+",


def get_run_records(wildcards):
    """Every run record of one study: configurations x repetitions."""
    study = STUDIES[wildcards.study]
    return [
        f"{R}/runs/{study.name}/{c.config_id}/rep{k}.json"
        for c in study.configurations()
        for k in range(study.repetitions)
    ]


def get_processes(wildcards):
    return int(CONFIGS[(wildcards.study, wildcards.config)].params[SWEEP.processes])


def get_run_spec(wildcards):
    """The run's full launch spec as deterministic JSON (so a changed launch reruns the run)."""
    cfg = CONFIGS[(wildcards.study, wildcards.config)]
    return RunSpec.build(SWEEP, cfg, int(wildcards.rep)).to_json()


def varies_processes(study):
    return SWEEP.processes in STUDIES[study].vary


# reference data shipped with the repository (resources/reference-data/README.md: sources, licences)
REFERENCE_DATA = os.path.relpath(os.path.join(workflow.basedir, "resources", "reference-data"))


def get_paper_input(key, default):
    """A reference-data path from the config's paper: section (relative to the working directory);
    the default is a path inside resources/reference-data/."""
    return SWEEP.extra["paper"].get(key, os.path.join(REFERENCE_DATA, default))


def get_bundle_args(study, config_id, output):
    """--spec/--output pairs for all repetitions of one configuration (bundle mode), shell-quoted."""
    import shlex

    cfg = CONFIGS[(study, config_id)]
    return " ".join(
        f"--spec {shlex.quote(RunSpec.build(SWEEP, cfg, k).to_json())} --output {shlex.quote(path)}"
        for k, path in enumerate(output)
    )


def get_study_outputs(study):
    t, f = f"{R}/tables/{study}", f"{R}/figures/{study}"
    out = [
        f"{t}/runs.csv",
        f"{t}/variability.csv",
        f"{t}/medians.csv",
        f"{f}/time_vs_parameters.png",
        f"{f}/grid.png",
        f"{f}/model_vs_measurement.png",
        f"{R}/models/{study}/models.csv",
    ]
    if varies_processes(study):
        out.append(f"{R}/overhead/{study}/overhead.png")
        out.append(f"{R}/metrics/{study}/pop.png")
    return out


def get_final_outputs(wildcards):
    return [p for s in STUDIES for p in get_study_outputs(s)] + [f"{R}/tables/models_summary.csv"]
