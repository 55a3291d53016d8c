"""How much disk one workspace may take: exact for the file tools and uploads, measured
after each shell call.

Contract, step by step:

1. The limit is ``Config.workspace_quota_bytes`` (``OPENPROGRAM_WORKSPACE_QUOTA_BYTES``,
   default 2 GiB); ``0`` means no quota.
2. Usage is the space the workspace's regular files take on disk (``st_blocks * 512``;
   a file with several hard links counted once), walked with
   :func:`openprogram.security.workspace_fs.walk` (no symlink followed).
3. The usage is recorded in ``<home>/quota/<hash of the workspace's path>`` (owner-only,
   outside the workspace, so the shell cannot touch it), read and written under an
   exclusive ``flock``: every process of the server sees the same record. A workspace
   with no record yet is measured first.
4. A file tool or upload that adds bytes (:func:`quota_write`) reserves them first,
   under the lock: it is refused with :class:`WorkspaceOverQuota` when the record plus
   what it adds would pass the limit; otherwise the reservation is added to the record
   before the write starts (so concurrent writers count it), and settled to what the
   file really takes when it ends (returned when it fails). A write that adds nothing
   is never refused.
5. ``bash`` can write anything inside its sandbox, so after each call
   (:func:`shell_usage_note`) the workspace is measured again under the lock and the
   record replaced. Over the limit, the tool result says so, and every write that adds
   bytes is refused until a later measurement finds room (the user deleted files).
   A shell call that was stopped or timed out is measured by the next one; a measurement
   made while a file tool's write is in flight can miss that write until the next.
6. The walk costs a ``stat`` per file: ~10 µs each here, ~0.5 s for 50,000 files
   (``python -m bench sandbox``). A result waits for it when this workspace's last walk
   took under 50 ms (so small workspaces are told at once, as in step 5); otherwise it
   waits at most 50 ms, and the walk finishes on its own thread. Either way the record
   is locked *before* the result returns and stays locked until the new usage is
   written, so every file tool and upload after the call waits for the measurement and
   is decided on it: nothing is decided on a stale record. Only the sentence can lag:
   a slow workspace's result then says what the last finished measurement found.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from openprogram.config import get_config
from openprogram.security.workspace_fs import open_root, walk
from openprogram.workspace import workspace_path_for_user

__all__ = [
    "WorkspaceOverQuota",
    "WorkspaceUsage",
    "estimate",
    "file_bytes",
    "human_bytes",
    "quota_write",
    "shell_usage_note",
    "user_workspace_usage",
    "workspace_usage",
]

_BLOCK = 4096
_NOTE_WAIT_S = 0.05
"""How long a shell call's result waits for a measurement known to be slow (step 6)."""
_last_walk_s: dict[str, float] = {}
"""How long each workspace's last measurement took, in this process."""

logger = logging.getLogger(__name__)


class WorkspaceOverQuota(PermissionError):
    """A write would take the workspace past its quota."""


@dataclass(frozen=True)
class WorkspaceUsage:
    used: int
    limit: int
    """0: no quota."""

    @property
    def over(self) -> bool:
        return bool(self.limit) and self.used > self.limit

    def __str__(self) -> str:
        if not self.limit:
            return f"{human_bytes(self.used)} used (no quota)"
        return f"{human_bytes(self.used)} of {human_bytes(self.limit)} used"


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def file_bytes(st: os.stat_result | None) -> int:
    """What a file takes on disk (step 2); nothing for no file."""
    return st.st_blocks * 512 if st is not None else 0


def _measure(workspace: Path) -> int:
    root = open_root(workspace)
    seen: set[tuple[int, int]] = set()
    used = 0
    try:
        for _parts, _fd, entries in walk(root, ()):
            for entry in entries:
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone since it was listed
                if st.st_nlink > 1:
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                used += file_bytes(st)
    finally:
        os.close(root)
    return used


def _locked_record(workspace: Path) -> int:
    """The workspace's usage record, open and exclusively locked (step 3): close to unlock."""
    directory = get_config().home / "quota"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:32]
    fd = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def _record(workspace: Path) -> Iterator[int]:
    """:func:`_locked_record` for the length of a ``with`` block."""
    fd = _locked_record(workspace)
    try:
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read_recorded(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).strip()
    return int(text) if text.isdigit() else None


def _read(fd: int, workspace: Path) -> int:
    recorded = _read_recorded(fd)
    return recorded if recorded is not None else _measure(workspace)


def _write(fd: int, used: int) -> None:
    data = str(max(0, used)).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _refusal(usage: WorkspaceUsage, adds: int) -> WorkspaceOverQuota:
    return WorkspaceOverQuota(
        f"the workspace is full: {usage} and this would add {human_bytes(adds)}; "
        "delete files you no longer need (with bash) to free space"
    )


@contextmanager
def quota_write(workspace: Path, *, adds: int) -> Iterator[Callable[[int], None]]:
    """Step 4: reserve about ``adds`` bytes for a write (or refuse it), then settle.

    The reservation is in the record while the body writes, so concurrent writers (other
    threads, other processes) count it. Yields ``settle(actual)``: call it with what the
    write really added once it is done; when the body raises, the reservation is
    returned.
    """
    limit = get_config().workspace_quota_bytes
    if not limit:
        yield lambda _actual: None
        return
    reserved = max(adds, 0)
    with _record(workspace) as fd:
        used = _read(fd, workspace)
        if reserved and used + reserved > limit:
            _write(fd, used)
            raise _refusal(WorkspaceUsage(used, limit), reserved)
        _write(fd, used + reserved)
    added = [0]
    try:
        yield lambda actual: added.__setitem__(0, actual)
    finally:
        with _record(workspace) as fd:
            _write(fd, _read(fd, workspace) - reserved + added[0])


def estimate(size: int) -> int:
    """What ``size`` bytes of new content will take on disk, rounded up to a block."""
    return -(-size // _BLOCK) * _BLOCK


def workspace_usage(workspace: Path) -> WorkspaceUsage:
    """The recorded usage (measured when there is no record yet), for the pages."""
    with _record(workspace) as fd:
        used = _read(fd, workspace)
        _write(fd, used)
    return WorkspaceUsage(used, get_config().workspace_quota_bytes)


def user_workspace_usage(user_id: str | int | None) -> WorkspaceUsage:
    """:func:`workspace_usage` of the workspace a user's turns run in (Account, Programs)."""
    return workspace_usage(workspace_path_for_user(user_id))


def shell_usage_note(workspace: Path) -> str:
    """Step 5: measure after a shell call; a sentence for its result when over quota.

    The record is locked here, before returning, so no write is decided on the old
    record; the walk then runs on a thread of its own that holds the lock until it has
    written the new usage (step 6).
    """
    key = str(workspace)
    fd = _locked_record(workspace)
    previous = _read_recorded(fd)
    done = threading.Event()
    measured: list[int] = []

    def remeasure() -> None:
        started = time.monotonic()
        try:
            measured.append(_measure(workspace))
            _write(fd, measured[0])
        except OSError as exc:  # the workspace went away meanwhile
            logger.info("workspace quota: could not measure %s: %s", workspace, exc)
        finally:
            os.close(fd)  # releases the lock
            _last_walk_s[key] = time.monotonic() - started
            done.set()

    threading.Thread(target=remeasure, name="openprogram-quota", daemon=True).start()
    quick = _last_walk_s.get(key, 0.0) < _NOTE_WAIT_S
    done.wait(None if quick else _NOTE_WAIT_S)
    if measured:
        used, measured_now = measured[0], True
    elif previous is not None:
        used, measured_now = previous, False
    else:
        return ""
    usage = WorkspaceUsage(used, get_config().workspace_quota_bytes)
    if not usage.over:
        return ""
    when = "" if measured_now else " at its last measurement"
    return (
        f"\n[the workspace is over its quota{when}: {usage}; the file tools and uploads "
        "refuse to add anything until files are deleted]"
    )
