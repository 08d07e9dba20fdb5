# One MPI launch per (study, configuration, repetition). The record is the job's output; every
# attempt is also archived under results/archive/ (see perfsweep.sweep.run), so nothing is lost.
# A shell command, not run:, because Snakemake starts a whole new Snakemake process per run: job.
# The command stays `python -m perfsweep.runner` (an entry point that runs perfsweep.sweep.run): Snakemake
# stores the shell command of every record it made, and a changed text measures every record again.
#
# With `bundle: repetitions` in the config, the k repetitions of a configuration run one after the
# other in one job (one SLURM allocation): far fewer scheduler jobs for many short runs. Raising k then
# reruns the configuration's bundle. The bundle job declares one output, a manifest listing its k
# records (written by the runner once every record is written): k times fewer files in the DAG, which
# is what makes a 77,760-run grid plan fast (bench/planning_scale.py).
#
# Repetitions run in rounds: every configuration's rep0 before any rep1, each round in a random order
# drawn from the config's seed (get_run_priority says why and how).
#
# Locally a run holds every core (config key exclusive:, default true; get_run_threads): measurements
# never overlap each other or any other job. On SLURM a run of p ranks asks for p tasks and the
# plugin's mpi resource (get_run_resources); the runner starts the ranks with the cluster launcher
# (config key cluster:). Snakemake retries a run job `retries` times, then once more: that last attempt
# runs nothing and writes the failure record of a run whose SLURM job ended without one (cancelled, node
# failure, time limit).
#
# Restart and repair (perfsweep.sweep.recover), in the main Snakemake process before it plans anything:
# after an interruption of any kind (even SIGKILL of Snakemake alone) the same command completes the
# sweep: stale locks go, finished records are kept (they are written atomically), runs still in flight
# are waited for. Damaged records are named in one line, moved under results/quarantine/ and measured
# again, records of another launch (common.smk: record_launched) under results/superseded/; every
# record (with bundles: its bundle's manifest) is a target of `all`, so a deleted one is measured again
# too. (get_expected_records, get_all_run_records and that step are in common.smk.)


if SWEEP.bundle == "repetitions":
    for _study in SWEEP.studies:

        rule:
            name:
                f"run_{_study.name}"
            output:
                manifest=layout.bundle_manifest(R, _study.name, "{config}"),
            log:
                layout.bundle_log(R, _study.name, "{config}"),
            params:
                specs=lambda wildcards, s=_study.name: get_bundle_args(s, wildcards.config),
            conda:
                ENV
            threads: get_run_threads(_study.name)
            priority: get_bundle_priority(_study.name)
            retries: SWEEP.retries + 1
            resources:
                **get_run_resources(_study.name),
            shell:
                "{resources.run_python:q} -m perfsweep.runner {params.specs} --timeout {resources.run_timeout}"
                " --attempt {resources.attempt}"
                " --retries {resources.run_retries} --manifest {output.manifest:q} 2>> {log:q}"

elif SWEEP.bundle == "packs":
    # With `bundle: packs` many runs of a round run one after the other in one job (common.smk's packs
    # section; perfsweep.sweep.packs, perfsweep.sweep.pack_run): a pack job declares one output, its
    # manifest, and its runner reads its runs from the pack's file.

    rule run_pack:
        output:
            manifest=layout.pack_manifest(R, "{pack}"),
        log:
            layout.pack_log(R, "{pack}"),
        params:
            pack=lambda wildcards: layout.pack_file(R, wildcards.pack),
            digest=get_pack_digest,
        conda:
            ENV
        threads: get_pack_threads
        priority: get_pack_priority
        retries: SWEEP.retries + PACK_RESTARTS
        resources:
            **get_pack_resources(),
        shell:
            "{resources.run_python:q} -m perfsweep.runner --pack {params.pack:q} --timeout {resources.run_timeout}"
            " --attempt {resources.attempt} --retries {resources.run_retries} --manifest {output.manifest:q}"
            " 2>> {log:q}"

else:

    rule run:
        output:
            record=layout.record(R, "{study}", "{config}", "{rep}"),
        log:
            layout.run_log(R, "{study}", "{config}", "{rep}"),
        params:
            spec=get_run_spec,
        conda:
            ENV
        threads: get_run_threads(None)
        priority: get_run_priority
        retries: SWEEP.retries + 1
        resources:
            **get_run_resources(),
        shell:
            "{resources.run_python:q} -m perfsweep.runner --spec {params.spec:q} --output {output.record:q}"
            " --timeout {resources.run_timeout} --attempt {resources.attempt} --retries {resources.run_retries}"
            " 2>> {log:q}"
