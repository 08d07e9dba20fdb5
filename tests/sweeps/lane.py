"""The session's second lane: work done beside the tests, in one forked process, while the tests that need
no quiet host run (the suite's tests stay serial; the lane is the other of the two cores).

A session sweep made with :func:`session_sweep` may be made ahead by the lane: the lane makes the selected
tests' sweeps in the order those tests first ask for them, then the session's cluster work (the task
:func:`last_task` registers: tests/sweeps/slurm.py). Whoever starts a sweep first makes it: a claim file
decides, so a test that asks for a sweep the lane has not begun makes it itself, and one that asks for a
sweep the lane is making waits for it. A sweep the lane made comes back as a pickle; what failed in it
fails the tests that read it, with the lane's traceback.

The tests that need a quiet host (markers ``timing``, ``slurm``, ``quiet``: their modules run last,
conftest.py) wait for the lane to end, and they ask for no sweep the lane makes (PAIRED sweeps, whose
verdicts the timing tests read, are made by the main lane in that quiet part). A process, not a thread:
a test's monkeypatch of the environment, the working directory or a module cannot reach it. Its own
output goes to ``lane.log``."""

from __future__ import annotations

import os
import pickle
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

import pytest

from conftest import QUIET

# fixture name: (directory basename, build(work directory) -> value)
BUILDERS: dict[str, tuple[str, Callable[[Path], object]]] = {}
# the lane's last task: (name, the arguments it needs for the selected tests or None, run(root, *args))
LAST: list[tuple[str, Callable, Callable]] = []
TIMEOUT = 2400  # seconds the lane may take in all


def session_sweep(basename: str):
    """Decorator: ``build(work) -> Sweep`` becomes the session fixture of its name, made by the lane or
    by the first test that asks (in ``work``, a directory ``basename``N of the session's)."""

    def wrap(build):
        BUILDERS[build.__name__] = (basename, build)

        def fixture(lane):
            return lane.get(build.__name__)

        fixture.__doc__ = build.__doc__
        return pytest.fixture(scope="session", name=build.__name__)(fixture)

    return wrap


def last_task(name: str, wanted: Callable, run: Callable) -> None:
    """Register the lane's last task: ``wanted(items)`` its arguments for the selected tests (None: not
    wanted), ``run(root, *arguments)`` its value (a dict)."""
    LAST.append((name, wanted, run))


class Lane:
    def __init__(self, root: Path, works: dict[str, Path], order: list[str], last: dict[str, tuple], factory):
        self.root, self.works, self.order, self.last, self.factory = root, works, order, last, factory
        (root / "claims").mkdir()
        (root / "done").mkdir()
        self.proc = None

    def start(self) -> None:
        import multiprocessing

        if not self.order and not self.last:
            return
        self.proc = multiprocessing.get_context("fork").Process(target=self._main, name="test-lane")
        self.proc.start()

    def claim(self, name: str) -> bool:
        try:
            os.close(os.open(self.root / "claims" / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def _put(self, name: str, status: str, value) -> None:
        done = self.root / "done" / name
        tmp = done.with_suffix(".tmp")
        try:
            tmp.write_bytes(pickle.dumps((status, value)))
        except Exception:  # a value that does not pickle: say so
            tmp.write_bytes(pickle.dumps(("failed", traceback.format_exc())))
        tmp.rename(done)

    def _main(self) -> None:  # the forked process
        log = open(self.root / "lane.log", "w", buffering=1)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log  # (pytest's capture of the test that started the lane holds them)
        for name in self.order:
            if self.claim(name):
                started = time.time()
                try:
                    self._put(name, "ok", BUILDERS[name][1](self.works[name]))
                except BaseException:
                    self._put(name, "failed", traceback.format_exc())
                print(f"{name}: {time.time() - started:.1f} s", flush=True)
        for name, (run, args) in self.last.items():
            started = time.time()
            try:
                self._put(name, "ok", run(self.root, *args))
            except BaseException:
                self._put(name, "failed", traceback.format_exc())
            print(f"{name}: {time.time() - started:.1f} s", flush=True)

    def _result(self, name: str):
        done = self.root / "done" / name
        deadline = time.time() + TIMEOUT
        while not done.exists():
            if self.proc is None or (not self.proc.is_alive() and not done.exists()):
                log = self.root / "lane.log"
                raise AssertionError(f"the test lane ended without {name!r}:\n"
                                     f"{log.read_text()[-4000:] if log.exists() else ''}")
            if time.time() > deadline:
                raise AssertionError(f"the test lane did not make {name!r} in {TIMEOUT} s")
            time.sleep(0.1)
        status, value = pickle.loads(done.read_bytes())
        if status != "ok":
            raise AssertionError(f"the test lane failed to make {name!r}:\n{value}")
        return value

    def get(self, name: str):
        """The session sweep ``name``: made here if the lane has not begun it, else the lane's."""
        if self.claim(name):  # (a sweep no test selected asked for: asked for by getfixturevalue)
            work = self.works.get(name) or self.factory.mktemp(BUILDERS[name][0])
            return BUILDERS[name][1](work)
        return self._result(name)

    def last_result(self, name: str) -> dict:
        """The value of the lane's last task ``name`` (registered by :func:`last_task`)."""
        return self._result(name)

    def wait(self) -> None:
        """Wait for the lane to end."""
        if self.proc is not None:
            self.proc.join(TIMEOUT)
            if self.proc.is_alive():
                self.stop()

    def stop(self) -> None:
        """An interrupted session: stop the lane (SIGINT: its sweeps stopped, the cluster too)."""
        import signal

        if self.proc is not None and self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGINT)
            self.proc.join(60)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()


@pytest.fixture(scope="session", autouse=True)
def lane(request, tmp_path_factory):
    """The session's lane, started at its first test: the session sweeps that the tests that need no quiet
    host ask for, in the order of their first use, then the last task if the selected tests want it."""
    items = request.session.items
    order = []
    for item in items:
        if not item.stash.get(QUIET, False):
            order += [name for name in item.fixturenames if name in BUILDERS and name not in order]
    names = sorted({name for item in items for name in item.fixturenames if name in BUILDERS})
    works = {name: tmp_path_factory.mktemp(BUILDERS[name][0]) for name in names}  # made here: no race
    last = {name: (run, args) for name, wanted, run in LAST if (args := wanted(items)) is not None}
    work = Lane(tmp_path_factory.mktemp("lane"), works, order, last, tmp_path_factory)
    work.start()
    yield work
    work.stop()


@pytest.fixture(autouse=True)
def quiet_host(request, lane):
    """A test that needs a quiet host (conftest.QUIET: run after all others) waits for the lane to end."""
    if request.node.stash.get(QUIET, False):
        lane.wait()
