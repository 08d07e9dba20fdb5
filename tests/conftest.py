import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# the shared sweeps (tests/sweeps/): each a session-scoped fixture, run once by the first test that asks
pytest_plugins = sorted(f"sweeps.{p.stem}" for p in (Path(__file__).parent / "sweeps").glob("[!_]*.py"))

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def runner_argv(spec, output, *more):
    """`python -m perfsweep.runner`'s arguments for one run (as the run rule gives them)."""
    return ["--spec", spec.to_json(), "--output", str(output), "--timeout", repr(spec.timeout), *map(str, more)]


def wait_for_app(runner_pid, proc, timeout=120):
    """Wait until the runner ``runner_pid`` has started its app (it has a child: its signal handlers are set
    by then), while ``proc`` runs; a fixed sleep is too short on a slow host."""
    from perfsweep.sweep.run import descendants

    t0 = time.time()
    while not descendants(runner_pid):
        assert time.time() - t0 < timeout and proc.poll() is None, "the runner started no app"
        time.sleep(0.01)


def process_state(pid):
    """The state letter of process ``pid`` (/proc/PID/stat: R, S, T, Z, ...), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def snakemake(*args, cwd=REPO, check=True, timeout=900):
    """Run the real Snakemake on the project's Snakefile; returns the CompletedProcess."""
    cmd = [str(BIN / "snakemake"), "--snakefile", str(REPO / "Snakefile"), *map(str, args)]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def run_paper_target(target, tmp_path, **paper):
    """Run a paper reproduction target of the default config with results in tmp_path; returns results/."""
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["results"] = str(tmp_path / "results")
    cfg["paper"] = {k: str(v) for k, v in paper.items()}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    snakemake(target, "--cores", "1", "--configfile", tmp_path / "c.yaml", cwd=tmp_path)
    return tmp_path / "results"


@pytest.fixture
def workdir(tmp_path):
    """A scratch directory to run Snakemake in (its .snakemake/ state stays there)."""
    return tmp_path


# a test that needs a quiet host: it times runs (marker timing), reads the cluster (slurm) or the machine's
# daemons (quiet), or reads a shared sweep that a timing test reads (its runs are timed: it is made on the
# quiet host too). It runs after all others, and it waits for the session's test lane, which makes sweeps
# and the cluster's work beside the others (tests/sweeps/lane.py).
QUIET = pytest.StashKey[bool]()
QUIET_MARKERS = ("timing", "slurm", "quiet")


def _shared_sweeps(item) -> set[str]:
    """The shared sweeps (session fixtures of tests/sweeps/) an item reads, by name (pytest's fixture info
    of the item: no public API gives a fixture's scope and module)."""
    defs = getattr(item, "_fixtureinfo", None)
    defs = defs.name2fixturedefs if defs else {}
    return {name for name in item.fixturenames if name in defs and name != "lane"
            and defs[name][-1].scope == "session" and defs[name][-1].func.__module__.startswith("sweeps.")}


def pytest_collection_modifyitems(config, items):
    """The tests that need a quiet host last, in their order, marked QUIET (tests/sweeps/lane.py puts its
    lane tests just before them)."""
    timed = {name for item in items if item.get_closest_marker("timing") for name in _shared_sweeps(item)}
    for item in items:
        item.stash[QUIET] = (any(item.get_closest_marker(m) for m in QUIET_MARKERS)
                             or bool(_shared_sweeps(item) & timed))
    items.sort(key=lambda item: item.stash[QUIET])  # stable: every other order kept


_SESSION_START: dict = {}


def pytest_sessionstart(session):
    _SESSION_START.update(time=time.monotonic(), load=os.getloadavg())


def pytest_terminal_summary(terminalreporter):
    """The tests' time and the host's load apart (a slow run on a busy host says so): the load average
    over 1, 5 and 15 minutes when the session started and now."""
    if not _SESSION_START:
        return
    fmt = lambda load: " ".join(f"{x:.2f}" for x in load)  # noqa: E731
    terminalreporter.write_line(f"tests took {time.monotonic() - _SESSION_START['time']:.0f} s; load average "
                                f"{fmt(_SESSION_START['load'])} at the start, {fmt(os.getloadavg())} at the end "
                                f"({os.cpu_count()} cores)")
