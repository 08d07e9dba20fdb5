"""The one base class of the caller's mistakes.

Anything derived from :class:`UserError` is bad input (a config, a command-line argument, a data file,
a run record): the ``perfsweep`` command prints it as one line ``perfsweep: <message>`` and exits 2,
without a traceback. Its message names the file, the field and the value.
"""

import contextlib
import sys


class UserError(ValueError):
    """A mistake of the caller: reported as one line, exit code 2."""


@contextlib.contextmanager
def one_line_errors():
    """For the scripts Snakemake runs: a UserError inside becomes one line ``perfsweep: <message>`` in the
    job's log and on the console, and exit code 1 (the job fails without a traceback)."""
    try:
        yield
    except UserError as exc:
        for stream in (sys.stderr, sys.__stderr__):
            print(f"perfsweep: {exc}", file=stream, flush=True)
        sys.exit(1)
