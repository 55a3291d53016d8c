"""The data directory is the server's alone: created owner-only, and a warning when it is not.

``$OPENPROGRAM_HOME`` holds the SQLite database, the secret key that seals every user's
MCP tokens, saved results and every user's workspace. Contract:

1. :func:`data_dir_create` makes it ``0700`` when missing (an existing directory is
   left as the operator made it: step 3 says so when it is wider).
2. :func:`private_file_create` makes the SQLite database file empty with ``O_CREAT |
   O_EXCL`` and mode ``0600`` before SQLite opens it (SQLite gives its ``-wal`` and
   ``-shm`` files the database file's permissions); :func:`private_file_write_once`
   writes the secret key ``0600`` from its first moment.
3. :func:`data_dir_warnings` lists each of them that other users of the machine can
   reach (any group or other permission bit), with the ``chmod`` that fixes it;
   :func:`data_dir_warn` logs them once at start-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from django.conf import settings

__all__ = [
    "data_dir_create",
    "data_dir_warn",
    "data_dir_warnings",
    "private_file_create",
    "private_file_write_once",
]

logger = logging.getLogger(__name__)


def data_dir_create(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)


def private_file_create(path: Path) -> None:
    """An empty owner-only file at ``path``, unless something is there already."""
    with contextlib.suppress(FileExistsError, FileNotFoundError):  # no directory: SQLite says
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))


def private_file_write_once(path: Path, text: str) -> None:
    """``path`` holds ``text``, owner-only, unless another process wrote it first: the
    text goes to a private temporary file that is then linked in place (never a moment
    with the file empty or readable by others)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink()


def data_dir_warnings(*, home: Path, database: Path | None) -> list[str]:
    """What other users of the machine could reach, each with its fix (step 3)."""
    files = [home / "secret_key"]
    if database is not None:
        files += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    warnings = []
    for path, wanted in [(home, 0o700), *((file, 0o600) for file in files)]:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o077:
            warnings.append(
                f"{path} can be reached by other users of this machine (mode {mode:04o}); "
                f"run: chmod {wanted:o} {path}"
            )
    return warnings


def data_dir_warn() -> None:
    database = settings.DATABASES["default"]
    sqlite = database["ENGINE"].endswith("sqlite3")
    for warning in data_dir_warnings(
        home=Path(settings.OPENPROGRAM_HOME),
        database=Path(database["NAME"]) if sqlite else None,
    ):
        logger.warning("%s", warning)
