"""Opening a history store: a SQLite file (the default) or a PostgreSQL database by URL.

Where the store is: ``--store`` on the command line, else the environment variable ``PERFSWEEP_HISTORY``,
else the config's ``history:`` key, else ``perfsweep-history.sqlite`` in the current directory
(:func:`locate`). A value with ``://`` is a database URL (``postgresql://user:password@host/db``;
SQLAlchemy's ``postgresql+psycopg://`` is the same), anything else a file path.

What is checked before anything is written, each a one-line :class:`HistoryError` (exit 2) that changes
nothing in the store:

- a SQLite file that is not one (its first 16 bytes), one that SQLite finds damaged, or one of another
  application (SQLite's ``application_id`` is not perfsweep's and the file has tables);
- a schema from a newer perfsweep (a revision this perfsweep's migrations do not know);
- a PostgreSQL server that does not answer within ``CONNECT_TIMEOUT`` seconds, or refuses the connection
  (no such role or database, a wrong password: its message, never the password).

An older schema is migrated (Alembic, perfsweep/history/migrations) once, under a lock that makes a
second process that opens it at the same moment wait and then find it done: SQLite's write lock (``BEGIN
IMMEDIATE``), PostgreSQL's transaction-scoped advisory lock. Alembic's version table is
``perfsweep_alembic_version``, so that a PostgreSQL database that another application migrates with
Alembic keeps its own.

Every write is one transaction (:meth:`Store.write`): on SQLite ``BEGIN IMMEDIATE`` with a busy timeout,
so two processes recording at the same moment take turns; a process killed inside its transaction leaves
the store as it was before (SQLite's rollback journal, PostgreSQL's transactions). SQLite's locking needs
a local file system: on a network file system (NFS, Lustre, GPFS) or a CI cache whose last writer wins,
use PostgreSQL (docs/how-to/history.md).
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DatabaseError, OperationalError

from perfsweep.errors import UserError
from perfsweep.history import ENV
DEFAULT = "perfsweep-history.sqlite"
APPLICATION_ID = 0x70737770  # "pswp": SQLite's application_id of a perfsweep store
VERSION_TABLE = "perfsweep_alembic_version"
HEAD = "0002"  # the revision of perfsweep.history.schema
CONNECT_TIMEOUT = 10  # seconds a PostgreSQL server has to answer
BUSY_TIMEOUT = 120  # seconds a SQLite writer waits for another's transaction
LOCK_KEY = 0x70737770  # PostgreSQL advisory lock of the migration
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_HEADER = b"SQLite format 3\x00"


class HistoryError(UserError):
    """A store that cannot be used, or a request it cannot answer: one line, exit 2."""


def locate(option: str | None = None, config_value: str | None = None) -> str:
    """The store to use: the option, else $PERFSWEEP_HISTORY, else the config's ``history:``, else DEFAULT."""
    return option or os.environ.get(ENV) or config_value or DEFAULT


def is_url(where: str) -> bool:
    return "://" in where


def shown(where: str) -> str:
    """The store as messages name it: a file's path, or the URL with its password masked."""
    if not is_url(where):
        return where
    try:
        return make_url(where).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: say no more of it than its scheme
        return where.split("://", 1)[0] + "://***"


class Store:
    """An open, current store: its engine and how it is named."""

    def __init__(self, engine: Engine, name: str):
        self.engine, self.name = engine, name
        self.sqlite = engine.dialect.name == "sqlite"

    def write(self):
        """One write transaction (BEGIN IMMEDIATE on SQLite: a second writer waits for it)."""
        return self._said(self.engine.begin)

    def read(self):
        return self._said(self.engine.connect)

    @contextmanager
    def _said(self, opened) -> Iterator[Connection]:
        """``opened()``'s connection; a database error as one line naming the store."""
        try:
            with opened() as conn:
                yield conn
        except OperationalError as exc:
            raise HistoryError(f"{self.name}: {_reason(exc)}") from None

    def close(self) -> None:
        self.engine.dispose()


def open_store(where: str) -> Store:
    """The store at ``where`` (a path or a URL), created or migrated to HEAD; HistoryError where it is not
    a perfsweep store, is damaged, is newer than this perfsweep, or does not answer."""
    name = shown(where)
    if is_url(where):
        url = make_url(where)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        if not url.drivername.startswith("postgresql"):
            raise HistoryError(f"{name}: not a PostgreSQL URL (give postgresql://user:password@host/database, "
                               "or a SQLite file's path)")
        engine = create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT}, pool_pre_ping=True)
    else:
        path = Path(where).expanduser()
        _check_sqlite_file(path, name)
        if not path.parent.is_dir():
            raise HistoryError(f"{name}: no such directory {path.parent}")
        engine = create_engine(f"sqlite:///{path.resolve()}", connect_args={"timeout": BUSY_TIMEOUT})
        _sqlite_transactions(engine)
    store = Store(engine, name)
    try:
        _migrate(store)
    except (OperationalError, DatabaseError) as exc:
        engine.dispose()
        raise HistoryError(f"{name}: {_reason(exc)}") from None
    except HistoryError:
        engine.dispose()
        raise
    return store


def _reason(exc: Exception) -> str:
    """A database error in a line: a server that does not answer, a damaged file, a lock not got."""
    orig = getattr(exc, "orig", exc)
    message = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    if "FATAL:" in message:  # the server answered and refused: no such role or database, a wrong password
        return f"the server refused the connection ({message.split('FATAL:', 1)[1].strip()[:160]})"
    if "timeout expired" in message or "Connection refused" in message or "could not connect" in message \
            or "connection failed" in message or "No such file or directory" in message and "socket" in message:
        return f"the server did not answer within {CONNECT_TIMEOUT} s ({message[:160]})"
    if isinstance(orig, sqlite3.DatabaseError) and ("malformed" in message or "not a database" in message):
        return f"a damaged SQLite file ({message}); nothing was changed in it"
    if "database is locked" in message:
        return f"another process held the store for {BUSY_TIMEOUT} s ({message})"
    return message[:200]


def _check_sqlite_file(path: Path, name: str) -> None:
    """A file that exists must be a SQLite database (an empty one is a new store)."""
    if not path.exists():
        return
    if path.is_dir():
        raise HistoryError(f"{name}: a directory, not a history store (give a file, e.g. {DEFAULT})")
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise HistoryError(f"{name}: not a perfsweep history store (not a SQLite file; damaged, or another "
                           "kind of file); nothing was changed in it")


def _sqlite_transactions(engine: Engine) -> None:
    """pysqlite's own transaction handling off; every transaction BEGIN IMMEDIATE (a writer takes the lock
    at its start, so two writers never deadlock on an upgrade from a read lock)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT * 1000}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _revision(conn: Connection) -> str | None:
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory  # Alembic only to migrate or refuse a store not at HEAD

    return {r.revision for r in ScriptDirectory(str(MIGRATIONS)).walk_revisions()}


def _check_sqlite_owner(conn: Connection, name: str) -> None:
    """A SQLite file of another application: its application id is not ours and it holds tables."""
    app_id = conn.exec_driver_sql("PRAGMA application_id").scalar()
    if app_id == APPLICATION_ID:
        return
    tables = inspect(conn).get_table_names()
    if app_id or tables:
        raise HistoryError(f"{name}: not a perfsweep history store (a SQLite file of another application: "
                           f"application id {app_id}, tables {', '.join(tables[:5]) or 'none'}); nothing was "
                           "changed in it")


def _migrate(store: Store) -> None:
    """Create or migrate the schema to HEAD, once: a process that finds it current writes nothing."""
    with store.engine.connect() as conn:  # a read first: a current store takes no lock
        if store.sqlite:
            _check_sqlite_owner(conn, store.name)
        current = _revision(conn)
        conn.rollback()
    if current == HEAD:
        return
    if current is not None and current not in _known_revisions():
        raise HistoryError(f"{store.name}: written by a newer perfsweep (schema revision {current}; this one knows "
                           f"up to {HEAD}): upgrade perfsweep; nothing was changed in the store")
    with store.engine.begin() as conn:  # the lock: BEGIN IMMEDIATE, or the advisory lock
        if not store.sqlite:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
        else:
            _check_sqlite_owner(conn, store.name)
        current = _revision(conn)
        if current == HEAD:  # another process migrated it meanwhile
            return
        if current is not None and current not in _known_revisions():
            raise HistoryError(f"{store.name}: written by a newer perfsweep (schema revision {current})")
        from alembic import command  # Alembic only where a store is created or migrated

        command.upgrade(alembic_config(conn), HEAD)
        if store.sqlite:
            conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")


def alembic_config(conn: Connection):
    """Alembic's config for the migrations on the open connection ``conn`` (in its transaction)."""
    from alembic.config import Config  # Alembic only where a store is created or migrated

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("version_table", VERSION_TABLE)
    config.attributes["connection"] = conn
    return config


def dumps(value) -> str:
    """JSON as the store keeps it: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
