"""The default config's kinds of study at reduced size, on the real ljmd app with real MPI ranks: one
sweep per test session, with its HTML report (``perfsweep run c.yaml --cores 2``, one Snakemake
invocation: fixed repetitions and no ``decide:``, so no rounds).

Its studies are named as the default config's (config/config.yaml), so that the docs' commands
(``perfsweep predict results/models/T_n_p/models.json ...``) run on it as written:

- T_n_m: two varied parameters on a full 3 x 3 grid (9 configurations: every run in its round's order
  is asserted on, tests/test_report_pages.py);
- T_n_p: strong scaling in n and p, p = 1..4 (12 configurations: the overhead model needs at least 3
  process counts above 1; p = 3, 4 share the 2 cores);
- T_n_m_c: three varied parameters on a sparse design (lines through the largest point plus 2 extra
  points: 9 of the 27 configurations), as the default config's.

3 values of a parameter are the fewest a model has terms to choose from; 4 steps a run (the run is
mostly its launch); 2 repetitions, which the variability tables and figures need. 60 runs in all.

Tests that change the tree work on a copy (``ljmd_sweep.copy(tmp_path / "copy")``);
tests/README.md lists the tests that read it."""

from __future__ import annotations

from . import Sweep, make_sweep
from .lane import session_sweep

LJMD_CONFIG = {
    "app": {"name": "ljmd", "args": {"steps": 4}},
    "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 1.5, "p": 1},
    "repetitions": 2,
    "studies": {
        "T_n_m": {"vary": {"n": [100, 200, 300], "m": [1, 2, 3]}},
        "T_n_p": {"vary": {"n": [100, 200, 300], "p": [1, 2, 3, 4]}, "fixed": {"m": 2}},
        "T_n_m_c": {"vary": {"n": [100, 200, 300], "m": [1, 2, 3], "c": [1.5, 2.0, 2.5]},
                    "design": {"kind": "sparse", "extra": 2, "base": "largest"}},
    },
}


@session_sweep("ljmd-sweep")
def ljmd_sweep(work) -> Sweep:
    """The sweep of LJMD_CONFIG with its report (results/report.html); read it, or change a copy."""
    return make_sweep(work, LJMD_CONFIG, "--cores", "2")
