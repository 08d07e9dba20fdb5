"""The history store on PostgreSQL (a throwaway server of tests/sweeps/postgres.py, only with
PERFSWEEP_TEST_POSTGRES=1): what tests/test_history.py checks on SQLite, on a real server. PLAN's six
synthetic sweeps recorded through the CLI give the compares of the same directories named by hand and
the change points of the same sweeps in SQLite; two processes recording at the same moment (other sweeps,
then the same ones) lose none and record none twice; an older schema opened by two processes at once is
migrated once, under the advisory lock; a server that does not answer, or refuses, is one line, exit 2.
Each test has a database of its own on the one server."""

from __future__ import annotations

import json
import multiprocessing
import socket
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sweeps.postgres import new_database
from test_compare_sweeps import synthetic_side
from test_history import PLAN, _variants, compare_json, one_line_exit_2, perfsweep

fork = multiprocessing.get_context("fork")


def _engine(url: str):
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    return create_engine(make_url(url).set(drivername="postgresql+psycopg"))


def _scalar(url: str, sql: str):
    from sqlalchemy import text

    engine = _engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql)).scalar()
    finally:
        engine.dispose()


@pytest.mark.slow
def test_compare_and_trends_on_postgres_are_those_of_the_directories_and_of_sqlite(postgres_url, tmp_path):
    """PLAN's sweeps recorded through the CLI into PostgreSQL (and the same into SQLite, in this process):
    from the fourth on, compare --history 3 against the PostgreSQL store chooses the last 3 before it and
    gives the rows and exit code of the same directories named by hand, --label branch=main passes the dev
    sweep over; the trends name the change points SQLite names for the same sweeps (#4 everywhere, #6 in
    r5 and all), with the same ratios."""
    from perfsweep.history.record import record
    from perfsweep.history.store import open_store
    from perfsweep.history.sweep import read_tree
    from perfsweep.history.trends import trends

    url, lite = new_database(postgres_url, "plan"), open_store(str(tmp_path / "h.sqlite"))
    h = {}
    for k, (name, factors, branch) in enumerate(PLAN):
        h[name] = synthetic_side(tmp_path, name, factors, noise=0.02, seed=500 + k)
        proc = perfsweep("history", "add", h[name], "--store", url, "--app-version", f"v{k + 1}",
                         "--label", f"branch={branch}")
        assert proc.returncode == 0 and f"recorded as sweep #{k + 1} in postgresql://" in proc.stdout, proc.stderr
        assert record(lite, read_tree(h[name]), {"branch": branch}, f"v{k + 1}") == (k + 1, True)
    names = [name for name, _, _ in PLAN]
    calls = [(h[names[k]], "--history", 3, "--store", url) for k in (3, 4, 5)]
    calls += [tuple(h[n] for n in names[k - 3:k + 1]) for k in (3, 4, 5)]
    calls += [(h["region"], "--history", 3, "--store", url, "--label", "branch=main"),
              (h["rep2"], h["whole"], h["rep4"], h["region"])]
    with ThreadPoolExecutor(3) as pool:  # the compares write their verdicts into the store at once
        trend = pool.submit(perfsweep, "history", "trend", "--store", url, "--study", "S", "--format", "json")
        listed = pool.submit(perfsweep, "history", "list", "--store", url, "--format", "json")
        results = list(pool.map(lambda args: compare_json(*args), calls))
    for i, k in enumerate((3, 4, 5)):
        (code, data, said), (hand_code, hand, _) = results[i], results[3 + i]
        assert said.startswith("perfsweep: compare: 3 baselines from the history store postgresql://"), said
        assert all(f"history #{j} " in said for j in (k - 2, k - 1, k)), said
        assert data["rows"] == hand["rows"] and code == hand_code, k
        assert data["baselines"] == [f"history #{j} (v{j}, branch={PLAN[j - 1][2]})" for j in range(k - 2, k + 1)]
    assert results[0][0] == 1 and {r["region"]: r["verdict"] for r in results[0][1]["rows"]}["all"] == "regression"
    (code, data, said), (hand_code, hand, _) = results[6:]
    assert "history #2 " in said and "history #3 " not in said, said  # rep3 is branch=dev
    assert data["rows"] == hand["rows"] and code == hand_code
    assert _scalar(url, "SELECT count(*) FROM verdicts") == 4
    assert [(s["sweep"], s["app_version"], s["labels"]) for s in json.loads(listed.result().stdout)["sweeps"]] == \
        [(k + 1, f"v{k + 1}", {"branch": branch}) for k, (_, _, branch) in enumerate(PLAN)]

    assert trend.result().returncode == 0, trend.result().stderr
    pg = {s["region"]: s for s in json.loads(trend.result().stdout)["series"]}
    sqlite = {s["region"]: s for s in trends(lite, study="S")["series"]}
    lite.close()
    changes = {region: [(c["sweep"], c["ratio"]) for c in s["changes"]] for region, s in pg.items()}
    assert changes == {region: [(c["sweep"], c["ratio"]) for c in s["changes"]] for region, s in sqlite.items()}
    assert {r: [c for c, _ in cs] for r, cs in changes.items()} == \
        {"all": [4, 6], "r5": [4, 6], **{f"r{k}": [4] for k in range(5)}}, changes
    for region, s in pg.items():
        assert [p["sweep"] for p in s["points"]] == [1, 2, 3, 4, 5, 6], region


def _writer(url: str, sweeps, log: str, barrier) -> None:
    """Open the store and record ``sweeps``, both at the moment the other writer does (``barrier``); the
    log gets "ready", then per sweep its digest, id and whether it was new (or the traceback)."""
    from perfsweep.history.record import record
    from perfsweep.history.store import open_store

    with open(log, "a", buffering=1) as f:
        try:
            barrier.wait(60)
            store = open_store(url)
            f.write("ready\n")
            barrier.wait(60)
            for sweep in sweeps:
                sweep_id, new = record(store, sweep)
                f.write(f"{sweep.digest} {sweep_id} {int(new)}\n")
            store.close()
        except BaseException:
            f.write(traceback.format_exc())
            raise


def _run_writers(url: str, parts, tmp_path: Path, tag: str) -> list[list[tuple[str, int, int]]]:
    """Two writers (_writer), each its part, at the same moment; per writer its (digest, id, new) lines."""
    barrier = fork.Barrier(2)
    logs = [tmp_path / f"{tag}{k}.log" for k in (0, 1)]
    writers = [fork.Process(target=_writer, args=(url, part, str(log), barrier)) for part, log in zip(parts, logs)]
    for w in writers:
        w.start()
    for w, log in zip(writers, logs):
        w.join(120)
        assert w.exitcode == 0, log.read_text()[-3000:]
    lines = [log.read_text().split("\n")[1:] for log in logs]
    return [[(d, int(i), int(n)) for d, i, n in (line.split() for line in part if line)] for part in lines]


@pytest.mark.slow
def test_two_writers_at_once_lose_nothing_and_record_nothing_twice(postgres_url, tmp_path):
    """Two processes create the store and record 20 sweeps each at the same moment: 40 recorded, each with
    its 500 runs, its study and 7 entries. Then both record the same 10 sweeps at the same moment (one
    finds the other's row or loses the race on the unique digest): 10 more, each recorded once, both told
    the same id."""
    url = new_database(postgres_url, "writers")
    sweeps = _variants(tmp_path, 50)
    assert len({s.digest for s in sweeps}) == 50
    first = _run_writers(url, [sweeps[0:40:2], sweeps[1:40:2]], tmp_path, "w")
    assert [len(part) for part in first] == [20, 20] and all(new for part in first for *_, new in part)
    assert len({i for part in first for _, i, _ in part}) == 40
    assert _scalar(url, "SELECT count(*) FROM sweeps") == 40
    same = _run_writers(url, [sweeps[40:], sweeps[40:]], tmp_path, "same")
    assert [(d, i) for d, i, _ in same[0]] == [(d, i) for d, i, _ in same[1]]
    assert [a[2] + b[2] for a, b in zip(*same)] == [1] * 10  # each recorded by exactly one of the two
    assert _scalar(url, "SELECT count(*) FROM sweeps") == 50
    assert _scalar(url, "SELECT count(DISTINCT digest) FROM sweeps") == 50
    assert _scalar(url, "SELECT count(*) FROM sweep_runs") == 50 * 500
    assert _scalar(url, "SELECT count(*) FROM studies") == 50 and _scalar(url, "SELECT count(*) FROM entries") == 350


def _open(url: str) -> None:
    from perfsweep.history.store import open_store

    open_store(url).close()


@pytest.mark.slow
def test_an_older_schema_is_migrated_once_when_two_processes_open_it_at_once(postgres_url):
    """A store at revision 0001 (Alembic, as store._migrate configures it); the migration's advisory lock
    held by the test while two processes open the store: both read 0001 and wait for the lock (pg_locks),
    then, the lock released, both open it, and the store is at HEAD with 0002's index once."""
    from alembic import command
    from sqlalchemy import text

    from perfsweep.history import store

    url = new_database(postgres_url, "older")
    engine = _engine(url)
    with engine.begin() as conn:
        command.upgrade(store.alembic_config(conn), "0001")
    assert _scalar(url, f"SELECT version_num FROM {store.VERSION_TABLE}") == "0001"
    index = "SELECT count(*) FROM pg_indexes WHERE indexname = 'sweeps_fingerprint'"
    assert _scalar(url, index) == 0
    waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": store.LOCK_KEY})
        openers = [fork.Process(target=_open, args=(url,)) for _ in range(2)]
        for p in openers:
            p.start()
        deadline = time.time() + 60
        while _scalar(url, waiting) < 2 and time.time() < deadline and all(p.exitcode is None for p in openers):
            time.sleep(0.05)
        assert _scalar(url, waiting) == 2, [p.exitcode for p in openers]  # both found 0001, both wait
        holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": store.LOCK_KEY})
        holder.commit()
        for p in openers:
            p.join(60)
    engine.dispose()
    assert [p.exitcode for p in openers] == [0, 0]
    assert _scalar(url, f"SELECT version_num FROM {store.VERSION_TABLE}") == store.HEAD
    assert _scalar(url, f"SELECT count(*) FROM {store.VERSION_TABLE}") == 1 and _scalar(url, index) == 1


@pytest.mark.slow
def test_a_server_that_does_not_answer_or_refuses_is_one_line_exit_2(postgres_url):
    """No server at the socket directory, a socket nobody accepts on: one line, exit 2, "did not answer",
    the URL's password masked. The running server refusing (no such role, no such database): one line,
    exit 2, the server's reason."""
    from sqlalchemy.engine import make_url

    with tempfile.TemporaryDirectory(prefix="perfsweep-nopg-") as empty:
        nobody = f"postgresql://ci:s3cret@/perf?host={empty}"
        said = one_line_exit_2(perfsweep("history", "list", "--store", nobody))
        assert "postgresql://ci:***@/perf?host=" in said and "s3cret" not in said and "did not answer" in said, said
        with socket.socket(socket.AF_UNIX) as dead:  # bound, never listening: connection refused
            dead.bind(f"{empty}/.s.PGSQL.5432")
            said = one_line_exit_2(perfsweep("history", "list", "--store", nobody))
        assert "ci:***@" in said and "s3cret" not in said and "did not answer" in said, said
    stranger = make_url(postgres_url).set(username="ci", password="s3cret").render_as_string(hide_password=False)
    said = one_line_exit_2(perfsweep("history", "list", "--store", stranger))
    assert "s3cret" not in said and 'refused the connection (role "ci" does not exist)' in said, said
    said = one_line_exit_2(perfsweep("history", "trend", "--store", make_url(postgres_url).set(database="nope")))
    assert 'refused the connection (database "nope" does not exist)' in said, said
