"""A busy host on purpose: keeps one core busy half of every second (a child spins 0.5 s, then sleeps
0.5 s) while a command runs, or until stopped. The load of the busy-host evidence (bench/replicates.py
--busy) and of the timing tests' busy runs:

    .venv/bin/python bench/busy.py -- .venv/bin/python -m pytest -m timing

runs the command under the load and exits with its exit code; without a command it loads until killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


class Load:
    """One core busy half of every second, in a child process of its own session, until :meth:`stop`."""

    CODE = "import time\nwhile True:\n    t = time.perf_counter() + 0.5\n    while time.perf_counter() < t: pass\n    time.sleep(0.5)\n"

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", self.CODE], start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def _exit(signum: int, _frame) -> None:
    sys.exit(128 + signum)


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else argv
    signal.signal(signal.SIGTERM, _exit)  # `kill` stops the load too (its child has a session of its own)
    load = Load()
    try:
        if not command:
            return load.proc.wait()
        print(f"busy.py: one core busy half of every second (pid {load.proc.pid}) while: {' '.join(command)}",
              flush=True)
        return subprocess.call(command)
    finally:
        load.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
