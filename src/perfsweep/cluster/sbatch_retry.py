"""perfsweep's ``sbatch``: a submission that SLURM refused only for the moment is tried again.

The Snakemake SLURM executor plugin submits each job by running ``sbatch ...`` through the shell, so
it uses the first ``sbatch`` on PATH. The job script goes on stdin (``sbatch ... /dev/stdin``), or in
``--wrap``. The plugin reports any non-zero exit as the job's error. So a controller that is busy,
restarting or out of reach for a moment uses up one of the job's attempts, and perfsweep may then
write the failure record of a run that never started. :func:`install_on_path` puts the shim
``bin/sbatch`` first on PATH. The shim runs this file (:func:`main`), which runs the real sbatch (the
first ``sbatch`` on PATH behind the shim) with the same arguments and the same stdin. On success, or
on a refusal that trying again cannot mend, it passes sbatch's stdout, stderr and exit code through
unchanged. On a transient refusal it waits and tries again, printing one line to stderr per retry::

    perfsweep: sbatch refused (sbatch: error: Socket timed out on send/recv operation); try 2 of 8 in 1.6 s

When it gives up it prints sbatch's last stdout and stderr, then a line that says so, and exits with
sbatch's last exit code.

The same shim stands for ``sinfo`` (the plugin asks it for the default partition before an sbatch
without one) and for the plugin's status queries, ``squeue ... --name RUN`` and ``scontrol show config``
(MinJobAge, which every Snakemake start asks). Plugin 2.8 forgets the jobs it polls when every status
query of a poll failed, and then waits for them for good; so these are tried again while the controller
is out of reach, for at most 45 s and 8 s (:data:`QUERIES`), under the plugin's own timeouts of 60 s and
10 s. Any other squeue or scontrol call (the runner's, in every job) goes from ``bin/sbatch`` straight
to the real tool, without a Python. Only sbatch's stdin is read (its script): the others' stdin may be a
pipe nobody closes (the jobstep plugin's, inside a job).

Usage::

    install_on_path()   # in the Snakemake process before the executor submits: PATH and PERFSWEEP_SBATCH_PYTHON
    # then, as the plugin calls it:  sbatch --parsable /dev/stdin < job.sh
    # or by hand, without the shim:  python src/perfsweep/cluster/sbatch_retry.py --parsable job.sh

Settings come from the environment. PERFSWEEP_SBATCH_TRIES (default 8) is the most times sbatch runs.
PERFSWEEP_SBATCH_BACKOFF (default 2) is the first wait in seconds; each wait after it doubles, up to
60 s. Each wait is drawn between half and all of that amount, so that many submitters refused
together do not all come back together. PERFSWEEP_SBATCH_DEADLINE (default 600 s, counted from the
first try) is the total: no wait is started that would end after it. The shim never kills a running
sbatch: once killed, nobody knows whether the controller took the job.

Transient means the controller could not take the job now. These messages, matched anywhere in
sbatch's stderr, come from SLURM's errno table (src/common/slurm_errno.c; 22.05's libslurmfull.so
has the same text) and from sbatch itself (src/sbatch/sbatch.c); see :data:`TRANSIENT`. They cover
a controller out of reach or restarting, a timeout or dropped connection, EAGAIN after sbatch's own
15 tries, MaxJobCount reached, a controller in standby during a failover, rate limiting, and a
submit limit. Anything else is permanent: a bad partition, account or QOS, a node configuration
the cluster does not have, a time limit over the partition's. A permanent refusal runs sbatch once.

Judgement calls:

* ``Required partition not available (inactive or drain)`` is permanent. An administrator puts a
  partition in DRAIN or INACTIVE for maintenance or retirement. That lasts hours, not the few minutes
  the deadline covers. Retrying would make every job of the sweep wait out the deadline and then fail
  anyway, while the user could choose another partition now. Snakemake submits the missing runs again
  on the next invocation, once the partition is back. ``System submissions disabled`` is permanent
  for the same reason.
* ``Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)`` covers
  both a submit limit, which the user's jobs free as they end, and a job bigger or longer than its
  QOS allows, which will never fit. Recent SLURM prints the reason on the line before it (``sbatch:
  error: QOSMaxSubmitJobPerUserLimit``). A reason naming a submit limit (``QOS…Submit…``,
  ``Assoc…Submit…``) is transient. Any other reason (``QOSMaxWallDurationPerJobLimit``, …) is
  permanent. If no reason is printed (older SLURM), the refusal counts as transient: at sweep scale
  it is almost always the submit limit, and a job that can never fit costs only the tries (about 3
  minutes with the defaults). That cost also applies to ``AssocMaxSubmitJobLimit`` when an
  association's limit is 0, as it is on some sites when ``--account`` is missing.
* A timeout that comes after sbatch has sent the job (``Socket timed out on send/recv operation``,
  ``Zero Bytes were transmitted or received``, ``Unable to contact slurm controller (receive
  failure)``) can hide a job the controller did take. Neither sbatch nor this shim can tell, so a
  retry can then queue the job twice, and Snakemake knows only the second one. It is retried
  anyway: an overloaded controller mostly times out before it creates the job, and the
  alternative is the spent attempt this module is for.
* The plugin treats any stderr containing ``submission failed`` as a failed submission, even when
  the exit code is 0. So a retry line never repeats sbatch's ``Batch job submission failed:``
  prefix. A job submitted on a later try then reads as submitted.

This file uses only the standard library and runs as a script (the shim runs it by its path), so the
Python that runs it does not need perfsweep installed.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time

TRIES_ENV, BACKOFF_ENV, DEADLINE_ENV = "PERFSWEEP_SBATCH_TRIES", "PERFSWEEP_SBATCH_BACKOFF", "PERFSWEEP_SBATCH_DEADLINE"
PYTHON_ENV = "PERFSWEEP_SBATCH_PYTHON"  # the Python the shim runs this file with (install_on_path sets it)
# a file every line of the shim also goes to (install_on_path's log=): the plugin shows sbatch's stderr only
# when sbatch failed, so a refusal that a retry mended would leave no trace
LOG_ENV = "PERFSWEEP_SBATCH_LOG"
DEFAULT_TRIES, DEFAULT_BACKOFF, DEFAULT_DEADLINE, MAX_WAIT = 8, 2.0, 600.0, 60.0

# sbatch's stderr says the controller could not take the job now; each is matched anywhere, ignoring case.
# Source: SLURM's errno table (src/common/slurm_errno.c) unless the comment names sbatch.c.
TRANSIENT = (
    "Unable to contact slurm controller",        # SLURMCTLD_COMMUNICATIONS_{CONNECTION,SEND,RECEIVE,SHUTDOWN}_ERROR
    "Socket timed out on send/recv operation",   # SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT: busy beyond MessageTimeout
    "Zero Bytes were transmitted or received",   # SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT: the connection dropped
    "Communication connection failure",          # SLURM_COMMUNICATIONS_CONNECTION_ERROR
    "Connection refused",                        # ECONNREFUSED ("Error connecting slurm stream socket at ...")
    "Connection timed out",                      # ETIMEDOUT; newer SLURM_COMMUNICATIONS_{CONNECT,READ,WRITE}_TIMEOUT
    "Resource temporarily unavailable",          # EAGAIN, once sbatch's own 15 tries have run out
    "Slurm temporarily unable to accept job",    # sbatch.c's line for EAGAIN
    "Unable to create job record, try again",    # ESLURM_ERROR_ON_DESC_TO_RECORD_COPY (22.05): MaxJobCount reached
    "MaxJobCount limit reached",                 # ESLURM_MAX_JOB_COUNT: the same in newer SLURM
    "Slurm job queue full",                      # sbatch.c's line for it
    "Slurm backup controller in standby mode",   # ESLURM_IN_STANDBY_MODE: during a failover
    "Controller is in standby mode",             # ESLURM_IN_STANDBY_USE_BACKUP
    "Rate limit exceeded",                       # SLURMCTLD_COMMUNICATIONS_BACKOFF / _HARD_DROP: rpc rate limiting
    "Job violates accounting/QOS policy",        # ESLURM_ACCOUNTING_POLICY: a submit limit unless REASON says not
)
_TRANSIENT = re.compile("|".join(map(re.escape, TRANSIENT)), re.IGNORECASE)
# the reason slurmctld gives before "Job violates accounting/QOS policy": "sbatch: error: AssocMaxSubmitJobLimit"
REASON = re.compile(r"^\s*\S+: error: ((?:QOS|Assoc)\w+)\s*$", re.MULTILINE)
SUBMIT_LIMIT = re.compile(r"^(?:QOS|Assoc)\w*Submit\w*$")  # QOSMaxSubmitJobPerUserLimit, AssocGrpSubmitJobsLimit, ...


def shim_dir() -> str:
    """The directory of the executable shim ``sbatch`` (``bin/`` beside this file)."""
    return os.path.join(os.path.dirname(os.path.realpath(__file__)), "bin")


def install_on_path(environ=os.environ, log: str | None = None) -> bool:
    """Put :func:`shim_dir` first on ``environ``'s PATH (once: an entry of it further on moves to the
    front) and name this Python in PERFSWEEP_SBATCH_PYTHON for the shim; ``log``: a file the shim
    appends its lines to as well (PERFSWEEP_SBATCH_LOG, an absolute path). Returns whether it changed
    anything; a second call changes nothing."""
    here, changed = shim_dir(), False
    if log and environ.get(LOG_ENV) != os.path.abspath(log):
        environ[LOG_ENV] = os.path.abspath(log)
        changed = True
    entries = environ.get("PATH", os.defpath).split(os.pathsep)
    if not _same_dir(entries[0], here):
        environ["PATH"] = os.pathsep.join([here, *(e for e in entries if not _same_dir(e, here))])
        changed = True
    if sys.executable and environ.get(PYTHON_ENV) != sys.executable:
        environ[PYTHON_ENV] = sys.executable
        changed = True
    return changed


def transient(stderr: str) -> bool:
    """Whether sbatch's stderr says the controller could not take the job *now* (see the module's text)."""
    reasons = REASON.findall(stderr)
    if reasons and not all(SUBMIT_LIMIT.match(r) for r in reasons):
        return False  # a size or time limit the job will never meet
    return bool(_TRANSIENT.search(stderr)) or any(SUBMIT_LIMIT.match(r) for r in reasons)


def wait_before(retry: int, first: float, rng: random.Random | None = None) -> float:
    """The wait before retry ``retry`` (1 before the second try), drawn between half and all of
    ``first * 2**(retry-1)`` seconds, which is at most MAX_WAIT."""
    full = min(MAX_WAIT, first * 2.0 ** min(retry - 1, 64))
    return full * (rng or random).uniform(0.5, 1.0)


# the shims in bin/: the plugin runs `sinfo -o %P` before an sbatch without a partition, and polls its jobs'
# states with `squeue ... --name RUN` after `scontrol show config` (MinJobAge); bin/sbatch passes any other
# squeue or scontrol call straight to the real one
TOOLS = ("sbatch", "sinfo", "squeue", "scontrol")
TOOL_ENV = "PERFSWEEP_SHIM_TOOL"  # which of them the shim was called as (bin/sbatch sets it)
# (most seconds, first wait) of the status queries' retries, under the plugin's own timeouts of the calls
# (60 s for squeue, 10 s for scontrol): past those it counts the call as failed, and when every status query
# of a poll failed (5 by default), plugin 2.8 forgets the jobs it was polling and waits for them forever
QUERIES = {"squeue": (45.0, 0.5), "scontrol": (8.0, 0.5)}


def find_sbatch(path: str | None = None, tool: str = "sbatch") -> str | None:
    """The real sbatch (or ``tool``): the first executable of that name on PATH that is no perfsweep
    shim. That skips this shim's directory (compared resolved) and any other copy of it, so that two
    checkouts on PATH do not call each other."""
    for entry in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        candidate = os.path.join(entry or os.curdir, tool)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and not _is_shim(candidate):
            return candidate
    return None


def main(argv: list[str] | None = None) -> int:
    """Act as ``sbatch argv...``: run the real sbatch, retrying a transient refusal; returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    tool = os.environ.pop(TOOL_ENV, "sbatch")
    tool = tool if tool in TOOLS else "sbatch"
    real = find_sbatch(tool=tool)
    if real is None:
        _say(f"perfsweep: no {tool} on PATH behind perfsweep's shim ({shim_dir()})")
        return 127
    tries = max(1, int(_setting(TRIES_ENV, DEFAULT_TRIES)))
    first, deadline = max(0.0, _setting(BACKOFF_ENV, DEFAULT_BACKOFF)), _setting(DEADLINE_ENV, DEFAULT_DEADLINE)
    if tool in QUERIES:
        most, first = QUERIES[tool]
        deadline, tries = min(deadline, most), 1 << 16  # until the deadline
    stdin = _stdin(args) if tool == "sbatch" else _INHERIT  # only sbatch reads stdin (its script), to feed again
    start = time.monotonic()
    for attempt in range(1, tries + 1):
        proc = _run([real, *args], stdin)
        err = proc.stderr.decode(errors="replace")
        if proc.returncode == 0 or not transient(err):
            return _pass_through(proc)
        if attempt == tries:
            break
        wait = wait_before(attempt, first)
        if time.monotonic() - start + wait > deadline:
            break
        refused = _first_line(err, proc.returncode)
        of = f"until {deadline:g} s" if tool in QUERIES else f"of {tries}"
        _say(f"perfsweep: {tool} refused ({refused}); try {attempt + 1} {of} in {wait:.2g} s")
        time.sleep(wait)
    code = _pass_through(proc)
    limits = f"{deadline:g} s for {tool}" if tool in QUERIES else f"{TRIES_ENV}={tries}, {DEADLINE_ENV}={deadline:g}"
    _say(f"perfsweep: {tool} refused {attempt} times in {time.monotonic() - start:.0f} s ({limits}); giving up")
    return code


# the script sbatch reads: bytes read once to be fed again on every try, or how to pass stdin on
_INHERIT = object()


def _stdin(args: list[str]):
    """stdin's bytes, read once, when sbatch may read the job script from it. A terminal, or any
    stdin under ``--wrap`` (sbatch does not read it then), is passed on as it is (_INHERIT), so a
    pipe that stays open cannot hang the shim. A closed or unusable stdin gives subprocess.DEVNULL."""
    try:
        fd = sys.stdin.fileno()
        os.fstat(fd)
    except (AttributeError, OSError, ValueError):  # None, closed, or not a file (io.UnsupportedOperation)
        return subprocess.DEVNULL
    if os.isatty(fd) or any(a == "--wrap" or a.startswith("--wrap=") for a in args):
        return _INHERIT
    data = bytearray()
    while chunk := os.read(fd, 1 << 16):
        data += chunk
    return bytes(data)


def _run(cmd: list[str], stdin) -> subprocess.CompletedProcess:
    if isinstance(stdin, bytes):
        return subprocess.run(cmd, input=stdin, capture_output=True)
    return subprocess.run(cmd, stdin=None if stdin is _INHERIT else stdin, capture_output=True)


def _pass_through(proc: subprocess.CompletedProcess) -> int:
    _write(sys.stdout, proc.stdout)
    _write(sys.stderr, proc.stderr)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode  # a signal, as the shell says it


def _first_line(stderr: str, code: int) -> str:
    """sbatch's first line of error, without "Batch job submission failed: " (see the module's text)."""
    line = next((s.strip() for s in stderr.splitlines() if s.strip()), f"exit code {code}, no message")
    line = re.sub(r"batch job submission failed:\s*", "", line, flags=re.IGNORECASE)
    return re.sub(r"submission failed", "submission refused", line, flags=re.IGNORECASE)


def _setting(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        _say(f"perfsweep: {name}={text!r} is no number; using {default:g}")
        return default


def _say(line: str) -> None:
    _write(sys.stderr, (line + "\n").encode())
    if os.environ.get(LOG_ENV):
        try:
            os.makedirs(os.path.dirname(os.environ[LOG_ENV]), exist_ok=True)
            with open(os.environ[LOG_ENV], "a", encoding="utf-8") as fh:
                fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
        except OSError:
            pass


def _write(stream, data: bytes) -> None:
    if not data or stream is None:
        return
    try:
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode(errors="replace"))
            stream.flush()
    except (OSError, ValueError):  # a closed stdout or stderr: the exit code still tells
        pass


def _same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a or os.curdir) == os.path.realpath(b)


def _is_shim(candidate: str) -> bool:
    real = os.path.realpath(candidate)
    return _same_dir(os.path.dirname(real), shim_dir()) or os.path.isfile(
        os.path.join(os.path.dirname(real), os.pardir, "sbatch_retry.py"))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
