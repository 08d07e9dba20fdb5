"""The history store (issue 56): sweeps recorded into a SQLite store (``perfsweep history add``), ``perfsweep
compare NEW --history N`` drawing its baselines from it, the trends and their change points, and a store
that survives two writers, killed writers and files that are not one.

The sweeps: ``history_sweeps`` records six seeded synthetic sweeps (tests/test_compare_sweeps.py's
synthetic_side, 2 % noise: three replicates, the whole program +20 %, a replicate of that, then region
r5 +20 % more) and the shared real sweep ljmd_sweep (tests/sweeps/ljmd.py), once per session.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from sweeps.lane import session_sweep
from test_compare_sweeps import PERFSWEEP, synthetic_side

ALL = {f"r{k}": 1.2 for k in range(6)}
PLAN = [("rep1", {}, "main"), ("rep2", {}, "main"), ("rep3", {}, "dev"), ("whole", ALL, "main"),
        ("rep4", ALL, "main"), ("region", {**ALL, "r5": 1.44}, "main")]


def perfsweep(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(PERFSWEEP), *map(str, args)], capture_output=True, text=True, timeout=300, **kw)


def one_line_exit_2(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("perfsweep: ") and "Traceback" not in proc.stderr
    return proc.stderr


@session_sweep("history")
def history_sweeps(root, ljmd_sweep):
    """{name: results directory} of PLAN's synthetic sweeps and the real one (``real``), each recorded in
    that order into ``store`` (labels branch=..., app version v1..v6). A session sweep (tests/sweeps/lane.py),
    which the test lane may make beside the other tests."""
    store = root / "h.sqlite"
    out = {"store": store}
    for k, (name, factors, branch) in enumerate(PLAN):
        out[name] = synthetic_side(root, name, factors, noise=0.02, seed=500 + k)
        proc = perfsweep("history", "add", out[name], "--store", store, "--app-version", f"v{k + 1}",
                         "--label", f"branch={branch}")
        assert proc.returncode == 0 and f"recorded as sweep #{k + 1} in {store}" in proc.stdout, proc.stderr
    out["real"] = ljmd_sweep.results
    proc = perfsweep("history", "add", out["real"], "--store", store)
    assert proc.returncode == 0 and "recorded as sweep #7" in proc.stdout and "60 run records" in proc.stdout, proc
    return out


def compare_json(*args) -> tuple[int, dict, str]:
    proc = perfsweep("compare", *args, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
def test_compare_against_the_store_is_compare_against_the_same_directories(history_sweeps):
    """Each synthetic sweep from the fourth on, judged against the store's last 3 before it: those 3 are
    chosen (the choice printed), and the rows and exit code are those of the same directories named by
    hand; with --label branch=main the dev sweep is passed over; the +20 % sweep is a regression."""
    h, store = history_sweeps, history_sweeps["store"]
    names = [name for name, _, _ in PLAN]
    for k in (3, 4, 5):
        code, data, said = compare_json(h[names[k]], "--history", 3, "--store", store)
        assert said.startswith(f"perfsweep: compare: 3 baselines from the history store {store}: history #{k - 2} ")
        assert f"history #{k - 1} " in said and f"history #{k} " in said, said
        hand_code, hand, _ = compare_json(*(h[n] for n in names[k - 3:k + 1]))
        assert data["rows"] == hand["rows"] and code == hand_code, k
        assert data["baselines"] == [f"history #{i} (v{i}, branch={PLAN[i - 1][2]})" for i in range(k - 2, k + 1)]
    code, data, _ = compare_json(h["whole"], "--history", 3, "--store", store)
    assert code == 1 and {r["region"]: r["verdict"] for r in data["rows"]}["all"] == "regression"
    code, data, said = compare_json(h["region"], "--history", 3, "--store", store, "--label", "branch=main")
    assert "history #2 " in said and "history #3 " not in said, said  # rep3 is branch=dev
    hand_code, hand, _ = compare_json(h["rep2"], h["whole"], h["rep4"], h["region"])
    assert data["rows"] == hand["rows"] and code == hand_code


@pytest.mark.slow
def test_too_few_baselines_and_shared_runs_are_said_exit_2(history_sweeps, tmp_path):
    """The real sweep has no other sweep of its studies: 0 of 1, exit 2. A copy that measured one more run
    (an incremental rerun) is another sweep, sharing the first one's runs: never its baseline. Recording
    the same tree again adds nothing."""
    store = history_sweeps["store"]
    said = one_line_exit_2(perfsweep("compare", history_sweeps["real"], "--history", 1, "--store", store))
    assert "0 of the 1 baselines asked for are recorded" in said and "T_n_m" in said
    again = perfsweep("history", "add", history_sweeps["real"], "--store", store)
    assert again.returncode == 0 and "already recorded as sweep #7" in again.stdout and "nothing added" in again.stdout
    more = tmp_path / "more"
    shutil.copytree(history_sweeps["real"], more, ignore=shutil.ignore_patterns("archive", "logs", "figures"))
    extra = more / "runs" / "T_n_m" / "n=100_m=1"
    record = json.loads(next(extra.glob("rep0.json")).read_text())
    (extra / "rep2.json").write_text(json.dumps({**record, "repetition": 2, "time": record["time"] * 1.01}))
    proc = perfsweep("history", "add", more, "--store", store)
    assert proc.returncode == 0 and "61 run records" in proc.stdout, proc.stdout + proc.stderr
    said = one_line_exit_2(perfsweep("compare", more, "--history", 1, "--store", store))
    assert "0 of the 1 baselines" in said
    listed = json.loads(perfsweep("history", "list", "--store", store, "--format", "json").stdout)
    runs = {s["results"]: s["runs"] for s in listed["sweeps"]}
    assert runs[str(Path(history_sweeps["real"]).resolve())] == 60 and runs[str(more.resolve())] == 61, runs
    assert len(listed["sweeps"]) == 8


@pytest.mark.slow
def test_the_trends_name_the_change_points(history_sweeps, tmp_path):
    """The whole program +20 % sweep (#4) is the change point of every region's time; the region sweep (#6)
    of r5 and of 'all', which contains it, and of no other region; as a table (json, md, csv) and a page."""
    store = history_sweeps["store"]
    proc = perfsweep("history", "trend", "--store", store, "--study", "S", "--format", "json",
                     "--html", tmp_path / "trends.html")
    assert proc.returncode == 0, proc.stderr
    series = {s["region"]: s for s in json.loads(proc.stdout)["series"]}
    assert sorted(series) == ["all", "r0", "r1", "r2", "r3", "r4", "r5"]
    changes = {region: [c["sweep"] for c in s["changes"]] for region, s in series.items()}
    assert changes == {"all": [4, 6], "r5": [4, 6], **{f"r{k}": [4] for k in range(5)}}, changes
    for region, s in series.items():
        assert 1.15 < s["changes"][0]["ratio"] < 1.25, (region, s["changes"])
        assert [p["sweep"] for p in s["points"]] == [1, 2, 3, 4, 5, 6]
    assert 1.15 < series["r5"]["changes"][1]["ratio"] < 1.25 and 1.03 < series["all"]["changes"][1]["ratio"] < 1.09
    md = perfsweep("history", "trend", "--store", store, "--study", "S", "--format", "md").stdout
    assert "# S / r5 / time: changes at #4 x1." in md and "; #6 x1." in md and "| study | region |" in md
    csv = perfsweep("history", "trend", "--store", store, "--format", "csv").stdout
    assert csv.startswith("study,region,metric,") and csv.count("\nS,r5,time,") == 6 and "\nT_n_p," in csv
    page = (tmp_path / "trends.html").read_text()
    assert page.count("<tr class='series'>") == 7 and page.count("class='change'") == 9
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # opens offline


def test_a_file_that_is_no_store_damaged_or_newer_is_one_line_and_left_as_it_was(tmp_path):
    """Damaged, foreign, newer: one line, exit 2, the file's bytes unchanged; an unreachable PostgreSQL
    server: one line naming the URL with its password masked."""
    side = synthetic_side(tmp_path, "a", {}, seed=3)
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE things (x)")
    store = tmp_path / "h.sqlite"
    assert perfsweep("history", "add", side, "--store", store).returncode == 0
    damaged = tmp_path / "damaged.sqlite"
    data = bytearray(store.read_bytes())
    data[100:4096] = bytes(range(256)) * 15 + bytes(range(156))  # the first page's b-tree: garbage
    damaged.write_bytes(bytes(data))
    newer = tmp_path / "newer.sqlite"
    shutil.copy(store, newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE perfsweep_alembic_version SET version_num = '9999'")
    for path, words in ((text, "not a SQLite file"), (foreign, "a SQLite file of another application"),
                        (damaged, "damaged"), (newer, "written by a newer perfsweep (schema revision 9999")):
        before = path.read_bytes()
        said = one_line_exit_2(perfsweep("history", "add", side, "--store", path))
        assert f"perfsweep: {path}: " in said and words in said, said
        assert path.read_bytes() == before, path
    said = one_line_exit_2(perfsweep("history", "list", "--store", "postgresql://ci:s3cret@127.0.0.1:9/perf"))
    assert "postgresql://ci:***@127.0.0.1:9/perf" in said and "s3cret" not in said and "did not answer" in said


def _variants(tmp_path: Path, count: int):
    """``count`` sweeps of distinct digests: one synthetic side whose aggregate's first value moves a little,
    each with 500 run digests of its own."""
    from perfsweep.history.sweep import read_tree, sha256

    base = synthetic_side(tmp_path, "base", {}, seed=7)
    table = base / "tables" / "S" / "aggregate.csv"
    original = table.read_text()
    out = []
    for k in range(count):
        rows = original.splitlines()
        cells = rows[1].split(",")
        cells[-1] = cells[-1].replace(cells[-1].split()[0], repr(float(cells[-1].split()[0]) * (1 + 1e-6 * (k + 1))), 1)
        rows[1] = ",".join(cells)
        table.write_text("\n".join(rows) + "\n")
        sweep = read_tree(base)
        # and the run records of a sweep of 500 runs (these have none): what a real sweep's recording writes
        sweep.run_digests = [sha256(f"{k} {i}".encode()) for i in range(500)]
        out.append(sweep)
    table.write_text(original)
    return out


def _record_all(where: str, sweeps, log: str) -> None:
    """Record ``sweeps`` one after another; the log gets "ready" once the store is open, then each digest
    once its transaction committed (a line a write: what a SIGKILL cannot take back)."""
    from perfsweep.history.record import record
    from perfsweep.history.store import open_store

    store = open_store(where)
    with open(log, "a", buffering=1) as f:
        f.write("ready\n")
        for sweep in sweeps:
            record(store, sweep)
            f.write(sweep.digest + "\n")


def _logged(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.slow
def test_two_writers_at_once_and_twenty_killed_writers_leave_a_whole_store(tmp_path):
    """Two processes recording 20 sweeps each at the same moment: 40 recorded, the store intact. Then 20
    writers killed with SIGKILL at seeded moments while they record sweep after sweep: the store opens,
    is intact, every sweep in it whole (its study and 7 entries), and the sweep being recorded when the
    kill came (SQLite's hot journal left behind says the kill fell inside the transaction: at least 10
    of the 20) is absent."""
    from perfsweep.history.store import open_store

    sweeps = _variants(tmp_path, 140)
    assert len({s.digest for s in sweeps}) == 140
    where = str(tmp_path / "h.sqlite")
    open_store(where).close()
    fork = multiprocessing.get_context("fork")
    writers = [fork.Process(target=_record_all, args=(where, sweeps[k::2][:20], str(tmp_path / f"w{k}.log")))
               for k in (0, 1)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    with sqlite3.connect(where) as db:
        assert db.execute("SELECT count(*) FROM sweeps").fetchone()[0] == 40
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rng = random.Random(56)
    todo, inside = sweeps[40:], 0
    for kill in range(20):
        log = tmp_path / f"kill{kill}.log"
        writer = fork.Process(target=_record_all, args=(where, todo, str(log)))
        writer.start()
        deadline = time.time() + 60
        while "ready" not in _logged(log) and time.time() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.05))  # a record takes a few ms: a few to a few dozen are done
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        committed = _logged(log)[1:]
        journal = Path(where + "-journal")
        hot = journal.exists() and journal.stat().st_size > 0
        in_flight = todo[len(committed)] if len(committed) < len(todo) else None
        store = open_store(where)  # rolls a hot journal back
        with sqlite3.connect(where) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            present = {d for (d,) in db.execute("SELECT digest FROM sweeps")}
            counts = db.execute("SELECT s.id, count(DISTINCT st.id), count(e.region) FROM sweeps s JOIN studies st "
                                "ON st.sweep_id = s.id JOIN entries e ON e.study_id = st.id GROUP BY s.id").fetchall()
        store.close()
        assert all(c[1:] == (1, 7) for c in counts) and len(counts) == len(present), counts
        assert all(d in present for d in committed)
        if hot:
            inside += 1
            assert in_flight is not None and in_flight.digest not in present, kill
        todo = [s for s in todo if s.digest not in present]
    print(f"killed inside the transaction: {inside} of 20")
    assert inside >= 10, inside


@pytest.mark.slow
def test_perfsweep_run_records_the_sweep_into_the_configured_store(ljmd_sweep, tmp_path):
    """``history:`` in the config: perfsweep run (on a copy of the shared sweep: nothing to measure) records
    the sweep with its labels and app version, and a second run adds nothing; a store that is no store is
    one line, exit 2, before Snakemake starts."""
    copy = ljmd_sweep.copy(tmp_path / "copy")
    copy.write_config({**copy.config, "history": "h.sqlite"})
    proc = perfsweep("run", "c.yaml", "--no-report", "--label", "branch=ci", "--app-version", "abc123", cwd=copy.work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "perfsweep: history: recorded as sweep #1 in h.sqlite (60 run records)" in proc.stdout, proc.stdout[-2000:]
    again = perfsweep("run", "c.yaml", "--no-report", cwd=copy.work)
    assert again.returncode == 0 and "already recorded as sweep #1" in again.stdout
    listed = json.loads(perfsweep("history", "list", "--store", copy.work / "h.sqlite", "--format", "json").stdout)
    (sweep,) = listed["sweeps"]
    assert sweep["labels"] == {"branch": "ci"} and sweep["app_version"] == "abc123" and sweep["runs"] == 60
    assert sorted(sweep["studies"]) == ["T_n_m", "T_n_m_c", "T_n_p"] and sweep["perfsweep_version"]
    (copy.work / "notes.sqlite").write_text("not a database\n")
    copy.write_config({**copy.config, "history": "notes.sqlite"})
    proc = perfsweep("run", "c.yaml", "--no-report", cwd=copy.work)
    said = one_line_exit_2(proc)
    assert "notes.sqlite: not a perfsweep history store" in said and "+ " not in proc.stdout


def _open(where: str, log: str) -> None:
    from perfsweep.history.store import open_store

    open_store(where).close()
    Path(log).write_text("opened\n")


def test_an_older_store_migrates_once_when_two_processes_open_it_at_once(tmp_path):
    """A store at revision 0001 (no index on the fingerprint) opened by two processes at the same moment:
    both open it, it is at HEAD once (one version row, the index there), nothing recorded in it is lost."""
    from alembic import command
    from sqlalchemy import create_engine

    from perfsweep.history import store as stores

    where = str(tmp_path / "old.sqlite")
    engine = create_engine(f"sqlite:///{where}")
    with engine.begin() as conn:
        command.upgrade(stores.alembic_config(conn), "0001")
        conn.exec_driver_sql(f"PRAGMA application_id = {stores.APPLICATION_ID}")
        conn.exec_driver_sql("INSERT INTO sweeps (digest, results, recorded_at, labels, fingerprint, host, repetitions, "
                             "runs) VALUES ('d', 'r', '2026-01-01', '{}', 'f', '{}', 1, 0)")
    engine.dispose()
    fork = multiprocessing.get_context("fork")
    openers = [fork.Process(target=_open, args=(where, str(tmp_path / f"o{k}"))) for k in (0, 1)]
    for p in openers:
        p.start()
    for p in openers:
        p.join(60)
        assert p.exitcode == 0
    assert all((tmp_path / f"o{k}").read_text() == "opened\n" for k in (0, 1))
    with sqlite3.connect(where) as db:
        assert db.execute(f"SELECT version_num FROM {stores.VERSION_TABLE}").fetchall() == [(stores.HEAD,)]
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'sweeps_fingerprint'").fetchall()
        assert db.execute("SELECT digest FROM sweeps").fetchall() == [("d",)]


PROBE = """<script>
const rows = [...document.querySelectorAll("tr.series")].map(tr => {
  const svg = tr.querySelector("svg"), box = svg.getBoundingClientRect();
  const line = svg.querySelector("polyline"), length = line ? line.getTotalLength() : 0;
  return {cells: [...tr.children].slice(0, 3).map(td => td.textContent), width: box.width, height: box.height,
          line: length, dots: svg.querySelectorAll("circle").length, changes: svg.querySelectorAll("line.change").length};
});
const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(rows);
document.body.appendChild(pre);
</script>"""


@pytest.mark.slow
def test_the_trend_page_draws_every_row_in_chromium(history_sweeps, tmp_path):
    """The trend page of every recorded study in real Chromium, offline: one row per series, each row's
    figure drawn (a line over the sweeps, a dot per measured median, a red rule per change point)."""
    import html as htmllib
    import re

    from perfsweep.report_check import chromium, dump_dom

    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (apt-get install chromium; CI installs it)")
    page = tmp_path / "trends.html"
    proc = perfsweep("history", "trend", "--store", history_sweeps["store"], "--html", page)
    assert proc.returncode == 0 and f"perfsweep: trend page written to {page}" in proc.stderr, proc.stderr
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    rows = json.loads(htmllib.unescape(re.search(r'<pre id="probe">(.*?)</pre>', dump_dom(probe), re.S).group(1)))
    by = {tuple(r["cells"]): r for r in rows}
    series = json.loads(perfsweep("history", "trend", "--store", history_sweeps["store"], "--format", "json").stdout)
    assert sorted(by) == sorted((s["study"], s["region"], s["metric"]) for s in series["series"]) and len(rows) > 7
    assert {c[0] for c in by} == {"S", "T_n_m", "T_n_p", "T_n_m_c"}
    for cells, r in by.items():
        assert r["width"] > 300 and r["height"] > 50 and r["line"] >= 0, (cells, r)
    synthetic = {c[1]: r for c, r in by.items() if c[0] == "S"}
    assert all(r["line"] > 100 and r["dots"] == 6 for r in synthetic.values()), synthetic
    assert {region: r["changes"] for region, r in synthetic.items()} == {"all": 2, "r5": 2, **{f"r{k}": 1 for k in range(5)}}
