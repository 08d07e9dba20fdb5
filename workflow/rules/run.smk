# One MPI launch per (study, configuration, repetition). The record is the job's output; every
# attempt is also archived under results/archive/ (see perfsweep.runner), so nothing is lost.
# A shell command, not run:, because Snakemake starts a whole new Snakemake process per run: job.
#
# With `bundle: repetitions` in the config, the k repetitions of a configuration run one after the
# other in one job (one SLURM allocation): far fewer scheduler jobs for many short runs. Raising k then
# reruns the configuration's bundle.
#
# Restart and repair (perfsweep.recovery), in the main Snakemake process before it plans anything:
# after an interruption of any kind (even SIGKILL of Snakemake alone) the same command completes the
# sweep: stale locks go, finished records are kept (they are written atomically), runs still in flight
# are waited for. Damaged records are named in one line, moved under results/quarantine/ and measured
# again; every record is a target of `all`, so a deleted one is measured again too.


def get_expected_records():
    """(record path, what its path stands for) for every run of the sweep."""
    out = []
    for s in SWEEP.studies:
        for c in s.configurations():
            varied = {n: c.params[n] for n in s.vary}
            for k in range(s.repetitions):
                out.append((f"{R}/runs/{s.name}/{c.config_id}/rep{k}.json",
                            dict(study=s.name, config_id=c.config_id, repetition=k, params=varied)))
    return out


def get_all_run_records(wildcards=None):
    return [path for path, _ in get_expected_records()]


if workflow.is_main_process:
    from perfsweep import recovery

    recovery.prepare(get_expected_records(), R, dry_run=recovery.dry_run_requested(sys.argv[1:]))


if SWEEP.bundle == "repetitions":
    for _study in SWEEP.studies:

        rule:
            name:
                f"run_{_study.name}"
            output:
                records=[f"{R}/runs/{_study.name}/{{config}}/rep{k}.json" for k in range(_study.repetitions)],
            params:
                specs=lambda wildcards, output, s=_study.name: get_bundle_args(s, wildcards.config, output),
                retries=SWEEP.retries,
            threads: lambda wildcards, s=_study.name: int(CONFIGS[(s, wildcards.config)].params[SWEEP.processes])
            retries: SWEEP.retries
            resources:
                attempt=lambda wildcards, attempt: attempt,
                runtime=lambda wildcards, s=_study.name: max(
                    1, int(STUDIES[s].repetitions * SWEEP.timeout // 60) + 1
                ),
            shell:
                "{PYTHON} -m perfsweep.runner {params.specs} --attempt {resources.attempt} --retries {params.retries}"

else:

    rule run:
        output:
            record=f"{R}/runs/{{study}}/{{config}}/rep{{rep}}.json",
        params:
            spec=get_run_spec,
            retries=SWEEP.retries,
        threads: get_processes
        retries: SWEEP.retries
        resources:
            attempt=lambda wildcards, attempt: attempt,
            runtime=lambda wildcards: max(1, int(SWEEP.timeout // 60) + 1),
        shell:
            "{PYTHON} -m perfsweep.runner --spec {params.spec:q} --output {output.record:q}"
            " --attempt {resources.attempt} --retries {params.retries}"
