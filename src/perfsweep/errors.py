"""The one base class of the caller's mistakes.

Anything derived from :class:`UserError` is bad input (a config, a command-line argument, a data file,
a run record): the ``perfsweep`` command prints it as one line ``perfsweep: <message>`` and exits 2,
without a traceback. Its message names the file, the field and the value.
"""


class UserError(ValueError):
    """A mistake of the caller: reported as one line, exit code 2."""
