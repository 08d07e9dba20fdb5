# One MPI launch per (study, configuration, repetition). The record is the job's output; every
# attempt is also archived under results/archive/ (see perfsweep.runner), so nothing is lost.
# A shell command, not run:, because Snakemake starts a whole new Snakemake process per run: job.


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
