"""The session's second lane: work done beside the tests, in one forked process (no descendant of the
tests' process: Lane.start says why), while the tests that need no quiet host run (the suite's tests
stay serial; the lane is the other of the two cores).

The lane first runs the session's cluster work (the task :func:`lane_task` registers:
tests/sweeps/slurm.py), which no test reads before the quiet part; then the selected tests' session
sweeps (made with :func:`session_sweep`) and the bodies of the tests made with :func:`lane_test`, the
one asked for last first. The tests' process makes the first ones as it reaches them, so the two meet
in the middle and end about together. Whoever starts a sweep first makes it: a claim file decides, so a
test that asks for a sweep no one has begun makes it itself, and one that asks for a sweep being made
waits for it. A sweep comes back as a pickle; what failed in it fails the tests that read it, with the
traceback.

The tests that need a quiet host (markers ``timing``, ``slurm``, ``quiet``, and the tests that read a
sweep a ``timing`` test reads: they run last, conftest.py) wait for the lane to end; the sweeps only they ask
for (the paired ones, whose verdicts the timing tests read) are made in that quiet part by the tests'
process. A process, not a thread: a test's monkeypatch of the environment, the working directory or a
module cannot reach it. Its own output goes to ``lane.log``, with each sweep's time and when it ended.
"""

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

# fixture name: (directory basename, build(work directory, *the session sweeps it builds on) -> value, their names)
BUILDERS: dict[str, tuple[str, Callable, tuple[str, ...]]] = {}
# the lane's tasks, run before its sweeps: (name, the arguments it needs for the selected tests or None,
# run(root, *args))
TASKS: list[tuple[str, Callable, Callable]] = []
TIMEOUT = 2400  # seconds the lane may take in all


def session_sweep(basename: str):
    """Decorator: ``build(work, *sweeps) -> Sweep`` becomes the session fixture of its name, made by the
    lane or by the first test that asks (in ``work``, a directory ``basename``N of the session's); the
    parameters after ``work`` name the session sweeps it builds on, which it is given."""

    def wrap(build):
        import inspect

        BUILDERS[build.__name__] = (basename, build, tuple(inspect.signature(build).parameters)[1:])

        def fixture(lane):
            return lane.get(build.__name__)

        fixture.__doc__ = build.__doc__
        return pytest.fixture(scope="session", name=build.__name__)(fixture)

    return wrap


def lane_test(test):
    """Decorator: the test's body (its ``tmp_path`` and the session sweeps it reads as parameters, nothing
    else) may run in the lane, ahead and beside the other tests; the test then fails with what failed
    there, traceback included, or passes. If no one has begun it when the test runs, it runs in the
    test's own process as any test does. For tests that run their own sweeps of minutes, whose steps
    are the case (an interrupted sweep, a changed config): their assertions are made as written, in
    whichever process ran them."""
    import functools
    import inspect

    params = tuple(inspect.signature(test).parameters)
    sweeps = tuple(p for p in params if p != "tmp_path")
    unknown = [p for p in sweeps if p not in BUILDERS]
    if unknown:
        raise TypeError(f"{test.__qualname__}: a lane test takes tmp_path and session sweeps only, not {unknown}")
    name = f"{test.__module__}.{test.__name__}"

    def build(work, *values):
        try:
            test(**dict(zip(sweeps, values)), **({"tmp_path": work} if "tmp_path" in params else {}))
        except pytest.skip.Exception as skip:  # (pytest.skip in the body: the test is skipped, wherever it ran)
            return str(skip.msg)
        return None

    BUILDERS[name] = (test.__name__[:30], build, sweeps)

    @functools.wraps(test)
    def run(lane):
        __tracebackhide__ = True  # (what failed in the body is in the message, with its traceback)
        skipped = lane.get(name)
        if skipped is not None:
            pytest.skip(skipped)

    del run.__wrapped__  # (pytest reads the parameters of the signature below: the lane only)
    run.__signature__ = inspect.Signature([inspect.Parameter("lane", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    run.lane_builder = name
    return run


def lane_task(name: str, wanted: Callable, run: Callable) -> None:
    """Register a task the lane runs before its sweeps: ``wanted(items)`` its arguments for the selected
    tests (None: not wanted), ``run(root, *arguments)`` its value (a dict)."""
    TASKS.append((name, wanted, run))


class Lane:
    def __init__(self, root: Path, works: dict[str, Path], order: list[str], tasks: dict[str, tuple], factory):
        self.root, self.works, self.order, self.tasks, self.factory = root, works, order, tasks, factory
        self.in_lane = False
        self.pid = None
        self.ended = root / "ended"
        (root / "claims").mkdir()
        (root / "done").mkdir()

    def start(self) -> None:
        """Fork the lane, twice: it is no descendant of the tests' process then, so that nothing a test
        does to that process's children reaches it (a kill or a wait of every child: the runner's
        timeout did both, in-process, before it learnt to spare its caller's own: perfsweep.sweep.run)."""
        if not self.order and not self.tasks:
            return
        pid_file = self.root / "pid"
        first = os.fork()
        if first == 0:  # the first child: fork the lane, say its pid, go
            code = 1
            try:
                lane = os.fork()
                if lane == 0:
                    try:
                        self._main()
                    finally:
                        os._exit(0)
                pid_file.write_text(str(lane))
                code = 0
            finally:
                os._exit(code)
        os.waitpid(first, 0)
        self.pid = int(pid_file.read_text())

    def running(self) -> bool:
        """Whether the lane runs (it writes ``ended`` as it ends; a zombie that no init reaps has ended)."""
        if self.pid is None or self.ended.exists():
            return False
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

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

    def _build(self, name: str):
        basename, build, needs = BUILDERS[name]
        work = self.works.get(name) or self.factory.mktemp(basename)  # (asked for by getfixturevalue)
        return build(work, *(self.get(need) for need in needs))

    def _main(self) -> None:  # the forked process
        self.in_lane = True
        self.t0 = time.time()
        log = open(self.root / "lane.log", "w", buffering=1)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log  # (pytest's capture of the test that started the lane holds them)
        try:
            self._work()
        except BaseException:
            traceback.print_exc()
        finally:
            print(f"lane ended after {time.time() - self.t0:.0f} s", flush=True)
            self.ended.touch()

    def _work(self) -> None:
        for name, (run, args) in self.tasks.items():
            self._do(name, run, self.root, *args)
        for name in self.order:
            if self.claim(name):
                self._do(name, self._build, name)

    def _do(self, name: str, func, *args) -> None:
        """Make ``name`` by ``func(*args)``, put it (or the traceback) where the tests find it, log its time."""
        started = time.time()
        try:
            self._put(name, "ok", func(*args))
        except BaseException:
            self._put(name, "failed", traceback.format_exc())
        print(f"{name}: {time.time() - started:.1f} s (ended {time.time() - self.t0:.0f} s into the lane)", flush=True)

    def _result(self, name: str):
        __tracebackhide__ = True
        done = self.root / "done" / name
        deadline = time.time() + TIMEOUT
        while not done.exists():
            # (in the lane: a sweep the tests' process makes, which puts it there too)
            if not self.in_lane and not self.running() and not done.exists():  # (put just before it ended)
                log = self.root / "lane.log"
                raise AssertionError(f"the test lane ended without {name!r}:\n"
                                     f"{log.read_text()[-4000:] if log.exists() else ''}")
            if time.time() > deadline:
                raise AssertionError(f"the test lane did not make {name!r} in {TIMEOUT} s")
            time.sleep(0.1)
        status, value = pickle.loads(done.read_bytes())
        if status != "ok":
            raise AssertionError(f"{name!r} failed in the test lane:\n{value}")
        return value

    def get(self, name: str):
        """The session sweep ``name``: made here if no one has begun it (and put where the lane finds it
        too), else the one the lane (or the tests' process) made."""
        __tracebackhide__ = True
        if not self.claim(name):
            return self._result(name)
        try:
            value = self._build(name)
        except BaseException:
            self._put(name, "failed", traceback.format_exc())
            raise
        self._put(name, "ok", value)
        return value

    def task_result(self, name: str) -> dict:
        """The value of the lane's task ``name`` (registered by :func:`lane_task`)."""
        return self._result(name)

    def wait(self, timeout: float = TIMEOUT) -> None:
        """Wait for the lane to end (past ``timeout``: stop it)."""
        deadline = time.time() + timeout
        while self.running() and time.time() < deadline:
            time.sleep(0.1)
        self.stop()

    def stop(self) -> None:
        """An interrupted session: stop the lane (SIGINT: its sweeps stopped, the cluster too)."""
        import signal

        for sig, wait in ((signal.SIGINT, 60), (signal.SIGKILL, 5)):
            if not self.running():
                return
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.time() + wait
            while self.running() and time.time() < deadline:
                time.sleep(0.1)


def _lane_builder(item) -> str | None:
    """The builder of a lane test's body (:func:`lane_test`), None for any other item."""
    return getattr(getattr(item, "function", None), "lane_builder", None)


def _sweeps_of(item) -> list[str]:
    """The session sweeps (and the lane test) an item asks for."""
    names = [name for name in item.fixturenames if name in BUILDERS]
    own = _lane_builder(item)
    return names + [own] if own else names


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """The lane tests after the other tests that need no quiet host (conftest.py, before this, marked and
    put last those that need one): the lane takes them from the end while the tests' process runs the
    others, so the two end about together. Stable: every other order kept."""
    items.sort(key=lambda item: (item.stash.get(QUIET, False), _lane_builder(item) is not None))


@pytest.fixture(scope="session", autouse=True)
def lane(request, tmp_path_factory):
    """The session's lane, started at its first test: its tasks if the selected tests want them, then the
    session sweeps and lane tests of the tests that need no quiet host, the last first (the tests'
    process makes the first ones as it reaches them, and the two meet in the middle)."""
    items = request.session.items
    order = []
    for item in items:
        if not item.stash.get(QUIET, False):
            order += [name for name in _sweeps_of(item) if name not in order]
    order.reverse()
    names = {name for item in items for name in _sweeps_of(item)}
    while needs := {need for name in names for need in BUILDERS[name][2]} - names:  # and what they build on
        names |= needs
    works = {name: tmp_path_factory.mktemp(BUILDERS[name][0]) for name in sorted(names)}  # made here: no race
    tasks = {name: (run, args) for name, wanted, run in TASKS if (args := wanted(items)) is not None}
    work = Lane(tmp_path_factory.mktemp("lane"), works, order, tasks, tmp_path_factory)
    work.start()
    yield work
    work.stop()


@pytest.fixture(autouse=True)
def quiet_host(request, lane):
    """A test that needs a quiet host (conftest.QUIET: run after all others) waits for the lane to end."""
    if request.node.stash.get(QUIET, False):
        lane.wait()
