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
"""

from __future__ import annotations

import fcntl
import hashlib
import os
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


@contextmanager
def _record(workspace: Path) -> Iterator[int]:
    """The workspace's usage record, open and exclusively locked (step 3)."""
    directory = get_config().home / "quota"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:32]
    fd = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # releases the lock


def _read(fd: int, workspace: Path) -> int:
    text = os.pread(fd, 32, 0).strip()
    return int(text) if text.isdigit() else _measure(workspace)


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
    """Step 5: measure after a shell call; a sentence for its result when over quota."""
    with _record(workspace) as fd:
        used = _measure(workspace)
        _write(fd, used)
    usage = WorkspaceUsage(used, get_config().workspace_quota_bytes)
    if not usage.over:
        return ""
    return (
        f"\n[the workspace is over its quota: {usage}; the file tools and uploads refuse "
        "to add anything until files are deleted]"
    )
