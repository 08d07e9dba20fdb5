"""Rounds of a sweep: after Snakemake has run, steps may plan more work; ``perfsweep run`` then runs
Snakemake again, until no step plans more (at most MAX_ROUNDS times).

Each step is ``step(sweep, results_dir) -> bool`` (True if it wrote new work into the results
directory's plan/, which the workflow reads while it plans)::

    from perfsweep import rounds
    if rounds.plan_more(sweep, sweep.results):   # every step runs, also after one returned True
        ...                                       # run Snakemake again
"""

from __future__ import annotations

from perfsweep import designs

ROUND_STEPS = [designs.next_round]
MAX_ROUNDS = 10


def plan_more(sweep, results_dir) -> bool:
    """Call every step; True if any planned more work."""
    return any([step(sweep, results_dir) for step in ROUND_STEPS])
