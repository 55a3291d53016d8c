"""A private PostgreSQL server for one benchmark, on a free loopback port, gone afterwards.

``TEST_POSTGRES_URL`` (``tests/services.sh start`` writes it) is used instead when set:
then a fresh database is created on that server for the run and dropped after it.
Otherwise ``initdb`` + ``pg_ctl`` from the newest ``/usr/lib/postgresql/*/bin`` run a
throw-away cluster (as the ``postgres`` user when we are root). ``synchronous_commit``
is off, as SQLite runs with ``synchronous=NORMAL``: a commit does not wait for the
disk, and a crash loses at most the last moment, never consistency.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.servers import free_port

__all__ = ["postgres_available", "postgres_database", "postgres_server_pid"]

_server_pids: dict[str, int] = {}
"""The postmaster of each private cluster running now, by the URL it was yielded as."""


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(found[-1]) if found else None


def postgres_server_pid(url: str) -> int | None:
    """The server process (postmaster) behind ``url`` when this module started it, else
    None (a ``TEST_POSTGRES_URL`` server is shared: its CPU is not one bench's)."""
    return _server_pids.get(url)


def postgres_available() -> bool:
    return bool(os.environ.get("TEST_POSTGRES_URL")) or _bin_dir() is not None


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """Yield the URL of an empty database (``postgres://...``) that is removed afterwards."""
    if os.environ.get("TEST_POSTGRES_URL"):
        with _fresh_database(os.environ["TEST_POSTGRES_URL"]) as url:
            yield url
        return
    with _private_cluster() as url:
        yield url


@contextlib.contextmanager
def _fresh_database(server_url: str) -> Iterator[str]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(server_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def _private_cluster() -> Iterator[str]:
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (make system-deps installs it)")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = Path(tempfile.mkdtemp(prefix="openprogram-bench-pg-"))
    if as_postgres:
        shutil.chown(data, "postgres")
    port = free_port()

    def run(*command: str) -> None:
        done = subprocess.run([*as_postgres, *command], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{command[0]} failed: {done.stderr.strip() or done.stdout.strip()}")

    cluster, log = str(data / "db"), str(data / "log")
    url = f"postgres://openprogram@127.0.0.1:{port}/openprogram"
    options = (
        f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c synchronous_commit=off "
        "-c max_connections=200"
    )
    try:
        run(str(bin_dir / "initdb"), "-D", cluster, "-A", "trust", "-U", "openprogram")
        run(str(bin_dir / "pg_ctl"), "-D", cluster, "-l", log, "-w", "-o", options, "start")
        run(
            str(bin_dir / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "openprogram",
            "openprogram",
        )
        _server_pids[url] = int((Path(cluster) / "postmaster.pid").read_text().split()[0])
        yield url
    finally:
        _server_pids.pop(url, None)
        with contextlib.suppress(RuntimeError):
            run(str(bin_dir / "pg_ctl"), "-D", cluster, "-m", "fast", "-w", "stop")
        shutil.rmtree(data, ignore_errors=True)
