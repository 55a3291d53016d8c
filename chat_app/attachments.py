"""Files attached in the chat: saved into the owner's workspace, where the file tools see them.

Contract of :func:`attachment_save`:

1. The file goes to ``<the user's workspace>/uploads/`` (``chat_app.selectors.workspace_for``:
   the same directory the user's turns run in, so ``read``/``grep``/``bash`` find it, and
   no other user's turn does).
2. The name is reduced to its last component and to letters, digits, ``._-`` and spaces;
   an existing file is never overwritten (``name-1.ext``, ``name-2.ext``…).
3. ``uploads`` is made and opened relative to the workspace's descriptor through
   ``openprogram.security.workspace_fs`` (no symlink followed: a symlinked ``uploads`` is
   refused with 409), and the file is created inside that open directory with
   ``O_EXCL | O_NOFOLLOW``: swapping ``uploads`` for a symlink at any moment changes
   nothing.
4. Over ``CHAT_ATTACHMENT_MAX_BYTES`` for the file, or over ``CHAT_UPLOADS_MAX_BYTES``
   for everything in ``uploads``: refused with 413, nothing kept. The new file is
   created at its announced size *before* the folder is totalled, so two uploads racing
   each other both count the other and cannot together pass the folder limit.
5. The workspace quota (``openprogram.security.workspace_quota``) is reserved for the
   announced size before the file is created and settled to what it takes: an upload
   that would pass it is refused with 413.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from chat_app.selectors import workspace_for
from core.api_errors import ConflictError, DomainError
from openprogram.security.workspace_fs import list_directory, open_directory, open_root
from openprogram.security.workspace_quota import (
    WorkspaceOverQuota,
    estimate,
    file_bytes,
    quota_write,
)

__all__ = ["UPLOADS_DIR", "AttachmentTooLarge", "SavedAttachment", "attachment_save"]

UPLOADS_DIR = "uploads"
_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")
_NAME_CHARS = 100


class AttachmentTooLarge(DomainError):
    status = 413


@dataclasses.dataclass(frozen=True)
class SavedAttachment:
    path: str
    """Relative to the workspace: what the model passes to the file tools."""
    name: str
    size: int


def _clean_name(name: str) -> str:
    base = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name).strip(" .")
    stem, dot, ext = base[:_NAME_CHARS].rpartition(".")
    base = f"{stem}{dot}{ext}" if stem else ext
    return base or "file"


def _uploads_used(directory_fd: int) -> int:
    return sum(
        entry.stat(follow_symlinks=False).st_size
        for entry in list_directory(directory_fd)
        if entry.is_file(follow_symlinks=False)
    )


def _open_uploads(workspace: Path) -> int:
    """``uploads/`` of the workspace, made when missing, open for listing (contract 3)."""
    try:
        root = open_root(workspace)
        try:
            return open_directory(
                root, (UPLOADS_DIR,), user_path=UPLOADS_DIR, create=True, mode=0o700, readable=True
            )
        finally:
            os.close(root)
    except OSError as exc:  # a symlink or a file named "uploads", say
        raise ConflictError(f"{UPLOADS_DIR} in your workspace is not usable: {exc}") from exc


def _create_exclusive(directory_fd: int, name: str) -> tuple[str, int]:
    stem, dot, ext = name.rpartition(".")
    if not stem:
        stem, dot, ext = name, "", ""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for n in range(1000):
        candidate = name if n == 0 else f"{stem}-{n}{dot}{ext}"
        try:
            return candidate, os.open(candidate, flags, 0o600, dir_fd=directory_fd)
        except FileExistsError:
            continue
    raise ConflictError(f"too many files named {name!r} in {UPLOADS_DIR}/")


def attachment_save(
    *, user: AbstractBaseUser, name: str, size: int, chunks: Iterable[bytes]
) -> SavedAttachment:
    limit = settings.CHAT_ATTACHMENT_MAX_BYTES
    if size > limit:
        raise AttachmentTooLarge(f"the file is {size} bytes; attachments may be {limit} at most")
    workspace = workspace_for(user=user)
    directory_fd = _open_uploads(workspace)
    total = settings.CHAT_UPLOADS_MAX_BYTES
    try:
        with _quota_held(workspace, size) as settle:
            saved, written = _write(directory_fd, name, size, chunks, total, settle)
    finally:
        os.close(directory_fd)
    return SavedAttachment(path=f"{UPLOADS_DIR}/{saved}", name=saved, size=written)


@contextmanager
def _quota_held(workspace: Path, size: int) -> Iterator[Callable[[int], None]]:
    """The workspace quota reserved for ``size`` bytes (contract 5), refused with 413."""
    try:
        with quota_write(workspace, adds=estimate(size)) as settle:
            yield settle
    except WorkspaceOverQuota as exc:
        raise AttachmentTooLarge(str(exc)) from None


def _write(
    directory_fd: int,
    name: str,
    size: int,
    chunks: Iterable[bytes],
    total: int,
    settle: Callable[[int], None],
) -> tuple[str, int]:
    """Contracts 2 and 4: the new file, written and settled; ``(its name, its size)``."""
    limit = settings.CHAT_ATTACHMENT_MAX_BYTES
    saved, fd = _create_exclusive(directory_fd, _clean_name(name))
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            # Reserve the announced size first (a sparse file): a concurrent upload's
            # total now includes this one, as this one's includes it (contract 4).
            out.truncate(size)
            if _uploads_used(directory_fd) > total:
                raise AttachmentTooLarge(
                    f"your {UPLOADS_DIR}/ folder would exceed {total} bytes; "
                    "delete older files first"
                )
            for chunk in chunks:
                written += len(chunk)
                if written > limit:
                    raise AttachmentTooLarge(f"attachments may be {limit} bytes at most")
                if written > size:  # more than reserved: the folder total would not hold
                    raise AttachmentTooLarge(f"the file is larger than its {size} bytes")
                out.write(chunk)
            out.truncate(written)
            out.flush()
            settle(file_bytes(os.fstat(out.fileno())))
    except BaseException:
        os.unlink(saved, dir_fd=directory_fd)
        raise
    return saved, written
