"""A throwaway PostgreSQL server for the history store's tests (tests/test_history_postgres.py).

``postgres_url`` starts one server per session and stops it at the session's end: Debian's initdb and
pg_ctl (the newest /usr/lib/postgresql/*/bin), run as an unprivileged user (the tests run as root, which
PostgreSQL refuses: the ``postgres`` user the Debian package creates, else ``nobody``; a non-root session
runs them as itself), in a temporary directory of that user's, listening on no TCP port
(``listen_addresses = ''``) with its Unix socket in that directory, trust authentication, fsync off (a
throwaway). The URL is ``postgresql://USER@/perfsweep?host=SOCKET_DIR``; :func:`new_database` makes
another database on the same server (a test that counts what is recorded starts from an empty one).
At the end: ``pg_ctl stop -m fast`` and the directory removed: the machine as it was found (the
Debian cluster's service is not started, its files are not touched).

It runs only when asked, PERFSWEEP_TEST_POSTGRES=1 (.ci/run sets it); installs nothing: with the opt-in
and no PostgreSQL binaries (Debian's ``postgresql`` package), the tests fail."""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

OPT_IN = "PERFSWEEP_TEST_POSTGRES"
DATABASE = "perfsweep"
USERS = ("postgres", "nobody")  # who runs the server when the session is root
TIMEOUT = 60  # seconds for initdb, the server's start and stop


def postgres_skip_reason(env=os.environ):
    """Why the PostgreSQL tests do not run here, or None. They start a server, so they run only when
    asked: PERFSWEEP_TEST_POSTGRES=1 (.ci/run sets it)."""
    if env.get(OPT_IN) != "1":
        return f"PostgreSQL tests start a server: set {OPT_IN}=1 to run them (.ci/run does)"
    return None


def server_bin(pattern: str = "/usr/lib/postgresql/*/bin") -> Path | None:
    """The newest PostgreSQL's bin directory that holds initdb and pg_ctl, or None."""
    found = [Path(p) for p in glob.glob(pattern) if os.access(Path(p) / "initdb", os.X_OK)
             and os.access(Path(p) / "pg_ctl", os.X_OK)]
    version = lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)] or [0]  # noqa: E731
    return max(found, key=version) if found else None


def server_user() -> str | None:
    """Who runs the server: this session's user where it is not root, else the first of USERS that exists."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    for name in USERS:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            pass
    return None


@dataclass
class Server:
    """A started server: its binaries, its directory (data/, socket/, server.log) and its user."""

    bin: Path
    root: Path
    user: str

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket(self) -> Path:
        return self.root / "socket"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{self.user}@/{database}?host={quote(str(self.socket), safe='/')}"

    def as_user(self, *cmd, check: bool = True) -> subprocess.CompletedProcess:
        """A command of the server's binaries, as its user (runuser where the session is root)."""
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        proc = subprocess.run([*prefix, str(self.bin / cmd[0]), *map(str, cmd[1:])], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                                 f"{proc.stderr[-2000:]}\n{self.log_tail()}")
        return proc

    def log_tail(self) -> str:
        return f"server log {self.log}:\n{self.log.read_text()[-3000:]}" if self.log.exists() else ""

    def start(self) -> None:
        self.socket.mkdir()
        if os.geteuid() == 0:
            owner = pwd.getpwnam(self.user)
            for path in (self.root, self.socket):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.as_user("initdb", "-D", self.data, "-U", self.user, "--auth=trust", "--no-locale", "-E", "UTF8",
                     "--no-sync", "--no-instructions")
        with open(self.data / "postgresql.conf", "a") as conf:  # no TCP; the socket in our directory
            conf.write(f"\nlisten_addresses = ''\nunix_socket_directories = '{self.socket}'\n"
                       "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        self.as_user("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", TIMEOUT, "-s", "start")

    def stop(self) -> None:
        """pg_ctl stop -m fast; a server that does not stop is killed (its postmaster.pid)."""
        if not (self.data / "postmaster.pid").exists():
            return
        if self.as_user("pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", TIMEOUT, "-s", "stop",
                        check=False).returncode == 0:
            return
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGQUIT)
            deadline = time.time() + 10
            while time.time() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
        except (OSError, ValueError, IndexError):
            pass


def new_database(url: str, name: str) -> str:
    """Create database ``name`` on the server of ``url`` (a ``postgres_url``); its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    given = make_url(url)
    with psycopg.connect(host=given.query["host"], user=given.username, dbname="postgres", autocommit=True,
                         connect_timeout=10) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return given.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def postgres_url():
    """The URL of the database ``perfsweep`` of a throwaway server (module docstring), started for this
    session and stopped after it, its directory removed. Installs nothing: with the opt-in and no
    PostgreSQL, the tests fail."""
    reason = postgres_skip_reason()
    if reason:
        pytest.skip(reason)
    where = server_bin()
    if where is None:
        pytest.fail(f"{OPT_IN}=1 but no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin: "
                    "install Debian's postgresql package (.ci/run does)", pytrace=False)
    user = server_user()
    if user is None:
        pytest.fail(f"no unprivileged user to run PostgreSQL as (one of {', '.join(USERS)})", pytrace=False)
    server = Server(where, Path(tempfile.mkdtemp(prefix="perfsweep-postgres-")), user)
    try:
        server.start()
        new_database(server.url("postgres"), DATABASE)
        yield server.url()
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
