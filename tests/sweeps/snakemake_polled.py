"""Snakemake, with the SLURM plugin's status polls at most CAP seconds apart: how the tests start their
sweeps on the local cluster (tests/sweeps/slurm.py, tests/test_slurm_faults.py).

The plugin (2.8) polls a sweep whose jobs are all pending or running less and less often: 10 s more
after each poll that finds none ended, up to 180 s, hard-coded. On a real cluster that spares the
controller; on the local one, where a sweep's jobs wait behind the other sweeps' jobs for a minute, it
made a sweep learn of its end up to 40 s late, and the cluster tests waited for it: 23 s of the shared
cluster sweeps and 18 s of the lost-node sweep (slurmctld's log against the sweeps' logs). The cap changes
when Snakemake asks, nothing of what it submits, runs or reads: the jobs inside SLURM start the plugin's
own `python -m snakemake`, not this file.

    python tests/sweeps/snakemake_polled.py ARGS...   # as `snakemake ARGS...`
"""

import sys

import snakemake_executor_plugin_slurm as slurm
from snakemake.cli import main

CAP = 3.0  # seconds

_polls = slurm.Executor.next_seconds_between_status_checks  # the property the plugin sets after each poll
slurm.Executor.next_seconds_between_status_checks = property(
    _polls.fget, lambda self, seconds: _polls.fset(self, seconds if seconds is None else min(seconds, CAP)))

if __name__ == "__main__":
    sys.exit(main())
