"""Every exception class of perfsweep.

Anything derived from :class:`UserError` is bad input (a config, a command-line argument, a data file,
a run record): the ``perfsweep`` command prints it as one line ``perfsweep: <message>`` and exits 2,
without a traceback. Its message names the file, the field and the value. The others are signals and
the workflow's own mistakes: :class:`RunFailed`, :class:`Interrupted`, :class:`Terminated`,
:class:`RuleMismatch`, :class:`DuplicateKey` (only inside the config loader).
"""

import contextlib
import sys


class UserError(ValueError):
    """A mistake of the caller: reported as one line, exit code 2."""


class ConfigError(UserError):
    """A user error in a config file: one line with file, field and value."""

    def __init__(self, source: str, where: str, message: str) -> None:
        self.source, self.where, self.message = source, where, message
        super().__init__(f"{source}: {where}: {message}" if where else f"{source}: {message}")


class DamagedRecord(UserError):
    """A run record that cannot be used: unreadable, incomplete, or not the run its path names."""


class NoSuccessfulRun(UserError):
    """Every run of a study failed: there are no measurements to aggregate or model."""


class ModelingError(UserError):
    """Input that cannot be modelled (one-line message)."""


class PredictError(UserError):
    """A wrong request (unknown parameter, bad constraint, no model): one line."""


class ExtrapFormatError(UserError):
    """A file that is not valid Extra-P input (one line with file, line or entry, and value)."""


class OverheadError(UserError):
    """Input that the overhead model cannot be fitted to (one-line message)."""


class CompareError(UserError):
    """Bad input to perfsweep compare: one line naming the file and the problem."""


class ParamError(UserError):
    """A parameter value a built-in app cannot run with (perfsweep.apps.ljmd: checked at config time too)."""


class DuplicateKey(Exception):
    """A key that appears twice in one YAML mapping (raised inside the config's YAML loader, which turns
    it into a ConfigError naming the line)."""

    def __init__(self, key, line: int) -> None:
        super().__init__(f"duplicate key {key!r} at line {line}")
        self.key, self.line = key, line


class RuleMismatch(TypeError):
    """A rule's input/output/params key and its stage function's parameters do not match (a bug of the
    workflow, not of the user's input): raised before the stage runs, naming rule, key and parameter."""


class RunFailed(RuntimeError):
    """Raised after a failed attempt has been archived, so that the workflow manager retries it."""


class Interrupted(BaseException):
    """SIGTERM/SIGINT arrived while the runner worked (scancel, Ctrl-C). The attempt's ``killed`` record
    is archived (perfsweep.sweep.run), so that the attempt after the last one knows the run was
    interrupted, not ended (perfsweep.sweep.ended)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.archived = False


class Terminated(Exception):
    """perfsweep run got SIGTERM: it stopped Snakemake and the runs in flight as a Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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
