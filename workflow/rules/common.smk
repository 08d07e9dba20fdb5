import dataclasses
import functools
import math
import os
import shlex
import sys

from snakemake.settings.types import DeploymentMethod

from perfsweep import layout
from perfsweep.apps import metric_kinds
from perfsweep.cluster import sbatch_retry
from perfsweep.cluster.launch import ClusterSettings
from perfsweep.config import load_config, load_config_file
from perfsweep.errors import ConfigError, UserError
from perfsweep.sweep import packs, recover
from perfsweep.sweep.plan import add_planned_points, measured_repetitions
from perfsweep.report import zip_report_requested, zip_report_unready
from perfsweep.sweep.order import nice_values, priorities, run_order, write_orders, write_variants
from perfsweep.sweep.spec import RunSpec

# Every rule runs in envs/perfsweep.yaml under --sdm conda (MPI from conda-forge), else in the Python that
# runs Snakemake. The conda environment does not install perfsweep: its jobs import it from this
# checkout (PYTHONPATH, inherited by every job; not a param, so a moved checkout reruns nothing).
ENV = "../../envs/perfsweep.yaml"
PYTHON = sys.executable
if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
    PYTHON = "python"
    # set for the jobs, not required of the user (so no envvars: directive)
    os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(workflow.basedir, "src"),
                                                               os.environ.get("PYTHONPATH")])))

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
try:  # the points earlier rounds of adaptive designs added (results/plan/<study>/points.json)
    add_planned_points(SWEEP)
except UserError as exc:
    sys.exit(f"perfsweep: {exc}")
R = SWEEP.results
STUDIES = {s.name: s for s in SWEEP.studies}
# every configuration measured: the design's and the validation points (config key validate:, never fitted)
CONFIGS = {(s.name, c.config_id): c for s in SWEEP.studies for c in s.measured_configurations()}
# repetitions per configuration: k, or with adaptive repetitions what the rounds planned so far
# (<results>/plan/<study>/repetitions.json, perfsweep.steps.rounds): raising it adds only the new rep<k>;
# a validation point: its fixed count
REPS = {(s.name, cid): n for s in SWEEP.studies for cid, n in measured_repetitions(s, R).items()}


wildcard_constraints:
    study="|".join(STUDIES),
    config="[^/]+",
    rep=r"\d+",
    pack=r"r\d+-p\d+t\d+-\d+",


def stage_outputs(stage):
    """A stage's outputs for the rule's {study} (or the sweep's own): perfsweep.layout owns every path."""
    return layout.stage_outputs(R, stage)


def stage_output(stage, key, study="{study}"):
    return layout.output(R, stage, key, study)


def stage_log(stage):
    return layout.stage_log(R, stage)


def get_run_records(wildcards):
    """Every run record of one study: configurations x repetitions."""
    study = STUDIES[wildcards.study]
    return [
        layout.record(R, study.name, c.config_id, k)
        for c in study.measured_configurations()
        for k in range(REPS[(study.name, c.config_id)])
    ]


def get_run_inputs(wildcards):
    """What a study's tables wait for: its run records, or with `bundle: repetitions` one manifest per
    configuration (a bundle job's one declared output: a leaner DAG, see run.smk), with `bundle: packs`
    the manifests of the packs that hold its runs."""
    if SWEEP.bundle == "packs":
        return [layout.pack_manifest(R, pid) for pid in STUDY_PACKS[wildcards.study]]
    if SWEEP.bundle != "repetitions":
        return get_run_records(wildcards)
    return [get_bundle_manifest(wildcards.study, c.config_id) for c in STUDIES[wildcards.study].measured_configurations()]


def get_bundle_manifest(study, config_id):
    return layout.bundle_manifest(R, study, config_id)


# Exclusive local runs (config key exclusive:, default true): a run job asks for every core, so no other
# job (another run, its start-up, a post-processing job) shares the machine with a measurement. On a
# cluster (--jobs, executor slurm) each run has its own allocation and asks for its p processes.
EXCLUSIVE = SWEEP.exclusive and workflow.nodes is None


def get_run_threads(study):
    """The cores a run job of ``study`` holds: its process count, or every core for exclusive runs."""

    def threads(wildcards):
        p = int(CONFIGS[(study or wildcards.study, wildcards.config)].params[SWEEP.processes])
        return max(p, workflow.cores) if EXCLUSIVE else p

    return threads


# Repetitions in rounds, by the run jobs' priority: every configuration's rep0 runs before any
# rep1, and so on. The host's speed drifts over seconds to a minute (in bench/designs.py's
# measurements, runs up to 40 s apart were correlated, runs more than 90 s apart not), so k runs of a
# configuration back to back share one state of the machine, and k runs spread over the sweep sample
# k. Within a round the runs of every study go in a random order drawn from the config's seed
# (perfsweep.sweep.order), so that a slow minute falls on configurations scattered over the grid, not
# on neighbouring sizes. With bundles the bundles are ordered so. Priorities stay positive: Snakemake's
# MILP scheduler maximises their sum, and the highest priority dominates its objective. On SLURM each
# run job also gets --nice (the highest priority 0): SLURM starts the jobs Snakemake submitted at once
# in that order. The main process writes the order to <results>/plan/<study>/order.json; the runner
# copies a run's entry into its record (field order). (No "rule" followed by a colon in this file's
# comments: Snakemake's linter would take it for a rule beside functions.)
if SWEEP.bundle == "repetitions":
    ORDER = run_order(SWEEP.seed, [(s, cid, 0) for (s, cid) in REPS])
else:
    ORDER = run_order(SWEEP.seed, [(s, cid, k) for (s, cid), n in REPS.items() for k in range(n)])
PRIORITY = priorities(ORDER)
NICE = nice_values(PRIORITY)


def get_run_priority(wildcards):
    return PRIORITY.get((wildcards.study, wildcards.config, int(wildcards.rep)), 1)


def get_bundle_priority(study):
    return lambda wildcards: PRIORITY.get((study, wildcards.config, 0), 1)


def record_orders():
    """The order entry of every record (a bundle's repetitions: the bundle's place, bundled: true)."""
    if SWEEP.bundle != "repetitions":
        return ORDER
    return {(s, cid, k): {**ORDER[(s, cid, 0)], "round": k, "bundled": True}
            for (s, cid), n in REPS.items() for k in range(n)}


def get_run_spec(wildcards):
    """The run's full launch spec as deterministic JSON (so a changed launch reruns the run)."""
    cfg = CONFIGS[(wildcards.study, wildcards.config)]
    return RunSpec.build(SWEEP, cfg, int(wildcards.rep)).to_json()


# reference data shipped with the repository (resources/reference-data/README.md: sources, licences)
REFERENCE_DATA = os.path.relpath(os.path.join(workflow.basedir, "resources", "reference-data"))


def get_paper_input(key, default):
    """A reference-data path from the config's paper: section (relative to the working directory);
    the default is a path inside resources/reference-data/."""
    return SWEEP.extra["paper"].get(key, os.path.join(REFERENCE_DATA, default))


def get_bundle_args(study, config_id):
    """--spec/--output pairs for all repetitions of one configuration (bundle mode), shell-quoted."""
    specs = RunSpec.build_repetitions(SWEEP, CONFIGS[(study, config_id)], REPS[(study, config_id)])
    return " ".join(
        f"--spec {shlex.quote(spec.to_json())}"
        f" --output {shlex.quote(layout.record(R, study, config_id, spec.repetition))}"
        for spec in specs
    )


def get_final_outputs(wildcards):
    return ([p for s in SWEEP.studies for p in layout.final_outputs(R, s.name, s.varies_processes())]
            + list(layout.stage_outputs(R, "models_summary").values()))


# --- SLURM: what each run job asks for (perfsweep.cluster.launch; config key cluster:) ---
CLUSTER = ClusterSettings.from_config(SWEEP.extra["cluster"])
RUN_RESOURCE_KEYS = list(CLUSTER.resources(2, 1, 1, final=False))


def get_run_resource(key, study=None):
    """One SLURM resource of a run job (of a bundle of ``study`` if given). The attempt after the last
    real one (retries + 2) only writes the failure record of a run SLURM ended, on one CPU."""

    def value(wildcards, attempt):
        s = study or wildcards.study
        final = attempt > SWEEP.retries + 1
        res = _run_resources(s, wildcards.config, study is not None, final)[key]
        if key == "slurm_extra" and not final:  # the run order (get_run_priority) for SLURM
            rep = 0 if study is not None else int(wildcards.rep)
            res = " ".join(filter(None, [res, f"--nice={NICE.get((s, wildcards.config, rep), 0)}"]))
        return res

    return value


@functools.lru_cache(maxsize=None)
def _run_resources(study, config_id, bundled, final):
    cfg = CONFIGS[(study, config_id)]
    runs = REPS[(study, config_id)] if bundled else 1
    minutes = max(1, int(runs * SWEEP.timeout // 60) + 1)
    return CLUSTER.resources(int(cfg.params[SWEEP.processes]), CLUSTER.threads(cfg.params), minutes, final)


def get_run_resources(study=None):
    """A run job's resources: its attempt, the runs' timeout and retries (strings: Snakemake's
    resources are int or str) and the Python that runs the runner, then its SLURM resources. The timeout
    and retries are resources, not params: Snakemake reruns a job whose params changed, and raising
    either would measure the whole sweep again. The runs they concern, those that timed out under a
    shorter timeout or failed with fewer attempts, the workflow sets aside (record_launched,
    RunSpec.launched). Nor is the Python a param: where the tools live is no part of a run's identity,
    so a moved checkout or a venv made again elsewhere measures nothing again."""
    return {"attempt": lambda wildcards, attempt: attempt, "run_timeout": repr(SWEEP.timeout),
            "run_retries": str(SWEEP.retries), "run_python": PYTHON,
            **{key: get_run_resource(key, study) for key in RUN_RESOURCE_KEYS}}


# --- packs (config `bundle: packs`, perfsweep.sweep.packs): runs of one round and one resource class,
# in the round's order, as many as `pack:` asks, in one job. The main process keeps the assignment in
# <results>/packs/plan.json, so that runs added later form new packs; a pack job's runner reads its runs
# from <results>/packs/<pack>.json, whose digest is the job's param (a changed launch reruns the pack,
# whose runner measures only the runs without a valid record). A pack job is started again after a
# cut (time limit, a failed run with attempts left): retries + PACK_RESTARTS attempts; the runs count
# their own attempts (perfsweep.sweep.pack_run), and `perfsweep run` once more goes on where it stopped.
PACK_RESTARTS = 3
if SWEEP.bundle == "packs":
    PACK_SETTINGS = packs.PackSettings.from_sweep(SWEEP)
    PACKS = packs.plan_sweep(SWEEP, REPS, ORDER)
else:
    PACKS = {}
PACK_OF = packs.of_runs(PACKS)
STUDY_PACKS = {s: sorted({PACK_OF[run] for run in ORDER if run[0] == s}) for s in STUDIES} if PACKS else {}


def get_manifest_of_record(fields):
    return layout.pack_manifest(R, PACK_OF[(fields["study"], fields["config_id"], fields["repetition"])])


@functools.lru_cache(maxsize=None)
def get_pack_text(pid):
    """The pack's file as its runner reads it (perfsweep.sweep.packs.pack_file_text)."""
    pack = PACKS[pid]
    specs = {run: _pack_spec(run[0], run[1]) for run in pack.runs}
    outputs = {run: layout.record(R, *run) for run in pack.runs}
    return packs.pack_file_text(pack, {run: dataclasses.replace(spec, repetition=run[2]) for run, spec in specs.items()},
                                outputs)


@functools.lru_cache(maxsize=None)  # a configuration comes back once a round, all others between
def _pack_spec(study, config_id):
    return RunSpec.build(SWEEP, CONFIGS[(study, config_id)], 0)


def get_pack_digest(wildcards):
    return packs.digest(get_pack_text(wildcards.pack))


def get_pack_threads(wildcards):
    p = PACKS[wildcards.pack].processes
    return max(p, workflow.cores) if EXCLUSIVE else p


def get_pack_priority(wildcards):
    return PRIORITY.get(PACKS[wildcards.pack].runs[0], 1)


def get_pack_resources():
    """A pack job's resources: as a run job's (get_run_resources), for its class of runs, with a time
    limit for all its runs (seconds_per_run each, half as much again, and one timeout) and the nice of
    its first run."""

    def value(key):
        def get(wildcards, attempt):
            pack = PACKS[wildcards.pack]
            seconds = len(pack.runs) * PACK_SETTINGS.seconds_per_run * 1.5 + SWEEP.timeout + 60
            res = CLUSTER.resources(pack.processes, pack.threads, max(1, math.ceil(seconds / 60)), False)[key]
            if key == "slurm_extra":
                res = " ".join(filter(None, [res, f"--nice={NICE.get(pack.runs[0], 0)}"]))
            return res

        return get

    return {"attempt": lambda wildcards, attempt: attempt, "run_timeout": repr(SWEEP.timeout),
            "run_retries": str(SWEEP.retries), "run_python": PYTHON,
            **{key: value(key) for key in RUN_RESOURCE_KEYS}}


# ---- run records: what `all` asks of the runs, and restart and repair (run.smk's header says why)

def get_expected_records():
    """(record path, what its path stands for) for every run of the sweep."""
    out = []
    for s in SWEEP.studies:
        for c in s.measured_configurations():
            varied = {n: c.params[n] for n in s.vary}
            for k in range(REPS[(s.name, c.config_id)]):
                out.append((layout.record(R, s.name, c.config_id, k),
                            dict(study=s.name, config_id=c.config_id, repetition=k, params=varied)))
    return out


def get_all_run_records(wildcards=None):
    """What `all` asks of the runs: every record, or with bundles every configuration's manifest, with
    packs every pack's."""
    if SWEEP.bundle == "packs":
        return [layout.pack_manifest(R, pid) for pid in PACKS]
    if SWEEP.bundle == "repetitions":
        return [layout.bundle_manifest(R, s.name, c.config_id) for s in SWEEP.studies for c in s.measured_configurations()]
    return [path for path, _ in get_expected_records()]


@functools.lru_cache(maxsize=1)  # the expected records come configuration by configuration; unbounded,
def _launch_spec(study, config_id):  # it would keep every spec (19 MB for 7,776 configurations)
    return RunSpec.build(SWEEP, CONFIGS[(study, config_id)], 0)


def record_launched(fields, record):
    """Whether the sweep's launch now made the record (else it is set aside and measured again)."""
    return _launch_spec(fields["study"], fields["config_id"]).launched(record)


if workflow.is_main_process:
    recover.prepare(get_expected_records(), R, dry_run=recover.dry_run_requested(sys.argv[1:]),
                     bundles=SWEEP.bundle in ("repetitions", "packs"), launched=record_launched,
                     manifest_of=get_manifest_of_record if SWEEP.bundle == "packs" else None)
    if not recover.dry_run_requested(sys.argv[1:]):
        write_orders(R, record_orders())  # before any run starts: the runner records its place
        if PACKS:  # which run is in which pack, and each pack's runs for its runner
            packs.write_plan(R, PACKS, {pid: get_pack_text(pid) for pid in PACKS})
        write_variants(R, SWEEP.variants)  # paired measurement: perfsweep compare reads the variants' order


# ---- the report's extra content (report.smk): what `all` asks of it
# a zip report also carries each model's full-size figures (drawn only for it: --report x.zip
# --report-after-run); the HTML report the sheet of every model
ZIP_REPORT = zip_report_requested(sys.argv[1:])
if ZIP_REPORT and (_unready := zip_report_unready(sys.argv[1:], [stage_output("model_figures", "figures", s) for s in STUDIES])):
    sys.exit(f"perfsweep: {_unready}")


def get_all_report_outputs(wildcards=None):
    """report.smk's outputs for every study plus the cross-study models table."""
    return ([p for s in SWEEP.studies for p in layout.report_outputs(R, s.name, s.varies_processes(), ZIP_REPORT)]
            + list(layout.stage_outputs(R, "report_pages_summary").values()))


# ---- SLURM submissions: a refused or timed-out sbatch is tried again with backoff before it spends a
# job's attempt (perfsweep.cluster.sbatch_retry puts its sbatch first on PATH; the plugin's shell finds it)
onstart:
    if workflow.executor_plugin is not None and workflow.executor_plugin.name == "slurm":
        sbatch_retry.install_on_path(log=layout.submit_log(R))
