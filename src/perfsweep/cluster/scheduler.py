"""What the scheduler says of a SLURM job: its state, the reason, its restarts and the time it has left,
from ``scontrol show job`` and ``squeue`` (both answer without an accounting database; jobs stay visible
for MinJobAge seconds after they end), with ``SLURM_RESTART_COUNT`` from the job's environment.

    story("1234")       # {"job_id": "1234", "state": "RUNNING", "reason": "None", "restarts": 1, ...}
    time_left("1234")   # seconds until the job's time limit, or None (unlimited, unknown)

Every call is bounded (a few seconds) and answers None or an empty story when the controller does not:
a run is never held up by a slow controller.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

CALL_TIMEOUT = 5.0  # seconds for one scontrol or squeue call
# the states in which SLURM ends (or ended) a job that was not done: an attempt then says which
ENDED_BY_SCHEDULER = ("NODE_FAIL", "PREEMPTED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE",
                      "BOOT_FAIL", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "FAILED")


def _call(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=CALL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def job_fields(job_id: str) -> dict[str, str]:
    """The ``Key=Value`` fields of ``scontrol show job -o JOB`` that hold no spaces (states, reasons,
    counts, times, node lists); empty when the controller does not know the job or does not answer."""
    text = _call(["scontrol", "show", "job", "-o", str(job_id)])
    if not text:
        return {}
    return {m.group(1): m.group(2) for m in re.finditer(r"(?:^|\s)([A-Za-z/:]+)=(\S*)", text.splitlines()[0])}


def story(job_id: str | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The job (default: the one this process runs in) as the scheduler tells it now: its id, state,
    reason, restart count (``SLURM_RESTART_COUNT`` where the job's environment has it, else scontrol's
    Restarts), batch host and node list. Empty outside SLURM."""
    env = os.environ if env is None else env
    job_id = job_id or env.get("SLURM_JOB_ID")
    if not job_id:
        return {}
    fields = job_fields(job_id)
    out: dict[str, Any] = {"job_id": str(job_id)}
    for key, name in (("JobState", "state"), ("Reason", "reason"), ("BatchHost", "batch_host"),
                      ("NodeList", "nodelist"), ("ExitCode", "exit_code")):
        if fields.get(key):
            out[name] = fields[key]
    restarts = env.get("SLURM_RESTART_COUNT") if job_id == env.get("SLURM_JOB_ID") else None
    restarts = restarts if restarts is not None else fields.get("Restarts")
    if restarts is not None and str(restarts).isdigit():
        out["restarts"] = int(restarts)
    return out


def _duration(text: str) -> float | None:
    """SLURM's ``[D-]HH:MM:SS`` / ``MM:SS`` as seconds; None for UNLIMITED, NOT_SET, INVALID."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if not m:
        return None
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def time_left(job_id: str | None = None) -> float | None:
    """Seconds until the job's time limit (``squeue -o %L``), None outside SLURM, without a limit or
    when the controller does not answer."""
    job_id = job_id or os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return None
    text = _call(["squeue", "-h", "-j", str(job_id), "-o", "%L"])
    return _duration(text) if text else None


def node_state(node: str) -> str | None:
    """A node's state as sinfo names it (``idle``, ``down*``, ``alloc`` ...), None if unknown."""
    text = _call(["sinfo", "-h", "-N", "-n", node, "-o", "%T"])
    return text.split()[0] if text and text.split() else None
