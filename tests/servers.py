"""Start a real daphne server as a subprocess for end-to-end tests."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db.models import NOT_PROVIDED, Model
from django.db.utils import ConnectionHandler

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct-horse-battery-staple"
# A directory for this test session's template databases (tests/conftest.py makes it and
# shares it with the xdist workers); without it every server runs migrate itself.
TEMPLATES_ENV = "OPENPROGRAM_TEST_TEMPLATES"
_CREATE_USERS = (
    "from django.contrib.auth import get_user_model as g; U=g();"
    f"U.objects.create_user('alice', password={PASSWORD!r});"
    f"U.objects.create_user('bob', password={PASSWORD!r});"
    f"U.objects.create_superuser('root', password={PASSWORD!r})"
)
# What turns a model field's value into what Django writes in a SQLite column (never opened).
_SQLITE = ConnectionHandler({"default": {"ENGINE": "django.db.backends.sqlite3"}})["default"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except Exception as exc:  # not up yet
            last = exc
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


@dataclass
class DaphneServer:
    home: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # The SQLite file is still an untouched copy of the session's migrated template.
    from_template: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str) -> str:
        self.from_template = False
        out = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout

    def shell(self, code: str) -> str:
        return self.manage("shell", "-c", code)

    def sql(self, statement: str, parameters: tuple = ()) -> list[tuple]:
        """One statement on the server's own SQLite file, committed; its rows.

        No Django start-up (a ``manage.py shell`` costs seconds), so for what a test only
        reads, or a plain UPDATE of its rows; the server may be running (WAL, a busy wait).
        """
        assert "DATABASE_URL" not in self.extra_env, "this server's database is not SQLite"
        self.from_template = False
        connection = sqlite3.connect(self.home / "db.sqlite3", timeout=30)
        try:
            with connection:
                return connection.execute(statement, parameters).fetchall()
        finally:
            connection.close()

    def insert(self, model: type[Model], /, **values: object) -> Model:
        """One ``model`` row written to the server's SQLite file as the ORM's ``create``
        writes it, without a Django start-up; the instance, with its key.

        Columns and conversions come from the model (``_meta``, each field's own
        ``pre_save`` and ``get_db_prep_save`` for SQLite), so a misspelt field fails here;
        defaults are the fields' own (callables called, ``db_default`` left to the
        database). Unlike ``create``, a value given for an ``auto_now`` field is kept, and
        no signal is sent (the server's code does not see the row being written).
        """
        instance = model(**values)
        columns: list[str] = []
        parameters: list[object] = []
        for column in model._meta.concrete_fields:
            given = column.name in values or column.attname in values
            if column.primary_key and getattr(instance, column.attname) is None:
                continue
            if not given and column.db_default is not NOT_PROVIDED:
                continue
            value = getattr(instance, column.attname) if given else column.pre_save(instance, True)
            columns.append(f'"{column.column}"')
            parameters.append(column.get_db_prep_save(value, connection=_SQLITE))
        statement = (
            f'INSERT INTO "{model._meta.db_table}" ({", ".join(columns)})'
            f' VALUES ({", ".join("?" * len(columns))}) RETURNING "{model._meta.pk.column}"'
        )
        ((key,),) = self.sql(statement, tuple(parameters))
        instance.pk = key
        return instance

    def create_users(self) -> None:
        """alice, bob and the superuser root, all with PASSWORD."""
        if self.from_template:
            shutil.copyfile(_template_database(users=True), self.home / "db.sqlite3")
        else:
            self.shell(_CREATE_USERS)

    def start(self) -> None:
        self.from_template = False
        self.log_path = self.home / "daphne.log"
        log = open(self.log_path, "w")  # noqa: SIM115 - closed by the process lifetime
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "openprogram_site.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for_http(self.url + "/healthz", proc=self.proc)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""


def make_server(home: Path, **extra_env: str) -> DaphneServer:
    """A server for ``home`` with its database migrated; start() starts it.

    A new home's SQLite database is a copy of the session's migrated template (what
    migrate gives, without a Django start-up per server); a home that has one already
    and PostgreSQL (``DATABASE_URL``) run migrate. A second process on the data of a
    running test server: ``another_process``.
    """
    server = _server(home, extra_env)
    database = home / "db.sqlite3"
    if "DATABASE_URL" in extra_env or database.exists() or not os.environ.get(TEMPLATES_ENV):
        server.manage("migrate", "--noinput", "-v", "0")
    else:
        _copy_database(_template_database(users=False), home)
        server.from_template = True
    return server


def another_process(first: DaphneServer) -> DaphneServer:
    """A second server on ``first``'s home, database and settings, as a second process
    behind one address; start() starts it. The database is ``first``'s, migrated already:
    no migrate of its own (a Django start-up of seconds that would change nothing)."""
    return _server(first.home, dict(first.extra_env))


def _server(home: Path, extra_env: dict[str, str]) -> DaphneServer:
    port = free_port()
    env = {
        **os.environ,
        "OPENPROGRAM_HOME": str(home),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "DJANGO_SETTINGS_MODULE": "openprogram_site.settings",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # Shared e2e servers and benchmarks start many turns per user; the throttles are
        # tested with their own limits (tests/integration/site/test_trust_boundary.py).
        "OPENPROGRAM_TURNS_PER_MINUTE": "0",
        "OPENPROGRAM_MAX_CONCURRENT_TURNS": "0",
        **extra_env,
    }
    env.pop("DATABASE_URL", None) if "DATABASE_URL" not in extra_env else None
    return DaphneServer(home=home, port=port, env=env, extra_env=extra_env)


def _copy_database(template: Path, home: Path) -> None:
    """What settings and migrate leave in a new home: the directory owner-only, and the
    database file owner-only, here with the template's bytes."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    database = home / "db.sqlite3"
    os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    shutil.copyfile(template, database)


def _template_database(*, users: bool) -> Path:
    """The session's migrated SQLite database, with alice, bob and root when ``users``.

    Built once per test session by the first server that needs it (the xdist workers
    share it, under a lock): migrate, run in a private home exactly as for any server, then
    the users written by SQL (``_insert_users``, no second Django start-up); the file is
    kept once its write-ahead log is folded in.
    The directory is new each session, so the template always has the current migrations.
    """
    directory = Path(os.environ[TEMPLATES_ENV])
    migrated = directory / "migrated.sqlite3"
    with_users = directory / "users.sqlite3"
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not migrated.exists():
            shutil.rmtree(directory / "build-migrated", ignore_errors=True)
            builder = _server(directory / "build-migrated", {})
            builder.manage("migrate", "--noinput", "-v", "0")
            _keep(builder.home / "db.sqlite3", migrated)
        if users and not with_users.exists():
            shutil.rmtree(directory / "build-users", ignore_errors=True)
            builder = _server(directory / "build-users", {})
            _copy_database(migrated, builder.home)
            _insert_users(builder)
            _keep(builder.home / "db.sqlite3", with_users)
    return with_users if users else migrated


def _insert_users(server: DaphneServer) -> None:
    """alice, bob and root as ``_CREATE_USERS`` makes them, written by ``insert``: the same
    fields (tests/integration/site/test_server_templates.py compares them), and each
    password hashed here as the servers hash it (PBKDF2, which the tests' settings keep)."""
    for username, admin in (("alice", False), ("bob", False), ("root", True)):
        server.insert(
            get_user_model(),
            username=username,
            password=make_password(PASSWORD, hasher="pbkdf2_sha256"),
            is_staff=admin,
            is_superuser=admin,
        )


def _keep(built: Path, target: Path) -> None:
    connection = sqlite3.connect(built)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    built.rename(target)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ServeProcess:
    """``serve`` (``manage.py serve`` or a wheel's ``openprogram serve``) with its output
    drained: once its one-time login link is read, a thread keeps reading what it prints
    (daphne logs every request to stdout; a full pipe would block those writes, and so
    the server and its exit) and keeps the text for a failure's message. Run with
    ``PYTHONFAULTHANDLER=1`` in its environment, so that a stop that hangs shows where."""

    LINK = re.compile(r"http://127\.0\.0\.1:\d+/login/token/[\w-]+/")

    def __init__(
        self, command: list, *, cwd: Path, env: dict[str, str], sigint_ignored: bool = False
    ) -> None:
        """``sigint_ignored``: started as by a parent that ignores Ctrl-C (a shell's
        background job): the ignore is inherited across exec."""
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env={**env, "PYTHONFAULTHANDLER": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_ignore_sigint if sigint_ignored else None,
        )
        self.output: list[str] = []
        self.link = ""
        for line in self.proc.stdout:
            self.output.append(line)
            match = self.LINK.search(line)
            if match:
                self.link = match.group(0)
                break
        self._drain = threading.Thread(target=self._read_the_rest, daemon=True)
        self._drain.start()

    def _read_the_rest(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line)

    def stop_with_ctrl_c(self, timeout: float = 60) -> int:
        """SIGINT, as Ctrl-C; its exit code. Still running ``timeout`` s later: SIGABRT
        (Python prints every thread's stack first), and the test fails with the output."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            masks = self._signal_masks()
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._drain.join(timeout=10)
            tail = "".join(self.output)[-20_000:]
            raise AssertionError(
                f"serve did not stop {timeout} s after Ctrl-C ({masks}):\n{tail}"
            ) from None

    def _signal_masks(self) -> str:
        """Whether SIGINT (bit 2, mask 0x2) was blocked, ignored or caught, as the kernel
        says: a server that inherited it ignored or blocked never sees Ctrl-C."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError as exc:
            return f"no /proc status: {exc}"
        return ", ".join(
            line.replace("\t", " ")
            for line in status.splitlines()
            if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
        )


@contextlib.contextmanager
def redis_server(directory: Path, *, db: int = 0) -> Iterator[str]:
    """A private redis-server on a free loopback port; yields its URL, stops it after.

    ``REDIS_TEST_URL`` (set by ``make test``, which runs one for the whole suite) is used
    instead when present.
    """
    if os.environ.get("REDIS_TEST_URL"):
        yield os.environ["REDIS_TEST_URL"]
        return
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed (make test installs it)")
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    proc = subprocess.Popen(
        [*command, "--appendonly", "no"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        ping = ["redis-cli", "-p", str(port), "ping"]
        while subprocess.run(ping, capture_output=True, check=False).stdout.strip() != b"PONG":
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start within 30 s")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/{db}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
