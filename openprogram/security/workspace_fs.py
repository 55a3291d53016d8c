"""Workspace files opened without a race: what is decided about a path is decided on the
descriptor that is then used, and no name is looked up twice.

The person who approves a ``bash`` call can rename anything in their workspace at any
moment, so a path checked by name and then opened by name can be a different file by the
time it is opened (a directory swapped for a symlink to the data directory). Every file
tool and chat attachments therefore open workspace paths only through this module.

Contract, step by step:

1. **The path as written** (:func:`path_parts`). It must be a non-empty ``str`` without
   NUL bytes. An absolute path, a leading ``~`` and any ``..`` component are refused;
   ``.`` and empty components are dropped, so ``"."`` names the workspace itself. The
   result is a tuple of plain names: nothing about the disk has been decided yet.
2. **The root** (:func:`open_root`). The workspace directory is opened once per call as
   an ``O_PATH | O_DIRECTORY`` descriptor. Its own path is the server's (the host chose
   it), so symlinks the operator put in it are followed; nothing below it is.
3. **Below the root** (:func:`open_beneath`), relative to that descriptor, following no
   symlink at all:

   - ``openat2`` (Linux ≥ 5.6, syscall 437, reached through ``ctypes``: Python's ``os``
     has no binding) with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
     RESOLVE_NO_SYMLINKS``; ``EAGAIN`` (a rename elsewhere raced the lookup) is retried;
   - where ``openat2`` is missing (``ENOSYS``, or ``EPERM``/``EINVAL`` from a seccomp
     filter or an old kernel, probed once) or ``OPENPROGRAM_FS_FORCE_WALK=1``: one
     component at a time, each directory with ``os.open(name, O_DIRECTORY | O_NOFOLLOW,
     dir_fd=parent)`` and the last component with ``O_NOFOLLOW``.

   A path through a symlink, at any component, raises :class:`WorkspacePathRefused`
   naming that component. (The component is found afterwards, for the message only;
   the refusal itself is the kernel's.) ``bash`` still follows the user's own symlinks
   inside its sandbox; the file tools follow none.
4. **What was opened** (:func:`open_node`). Files are opened ``O_NONBLOCK`` (a FIFO the
   sandbox made with ``mkfifo`` cannot hang the call) and ``fstat`` decides on that
   descriptor: anything but a regular file or a directory is refused. Reads use that
   same descriptor.
5. **Writing** (:func:`open_parent`, :func:`replace_file`). The parent directory is
   reached by the same walk; with ``create=True`` a missing directory is made with
   ``mkdirat`` in the descriptor of its parent and then opened ``O_NOFOLLOW`` (a symlink
   swapped in after the ``mkdir`` is refused), never ``mkdir(parents=True)`` on a path.
   An existing target that is not a regular file, is a symlink, or has other hard links
   (``st_nlink > 1``) is refused. New content goes to a temporary file created
   ``O_EXCL`` in the parent's descriptor and is renamed over the name in that same
   descriptor: a reader sees the old file or the new one, and whatever is swapped in at
   the name (a symlink, a hard link) is replaced, never written through.
6. **Walking** (:func:`walk`). A directory is listed with ``os.scandir(fd)``; each
   subdirectory is opened from the root descriptor by its relative path with step 3's
   rules, so a subdirectory swapped for a symlink mid-walk is skipped, not followed.
   Symlinks are reported as entries, never followed; at most one directory descriptor
   is open besides the root.

Refusals are :class:`WorkspacePathRefused` (a :class:`PermissionError`) whose message
names the path as written and why; a missing path is a :class:`FileNotFoundError`. The
model gets either as an ``is_error`` result it can act on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from openprogram.security._openat2 import openat2 as _openat2

__all__ = [
    "FORCE_WALK_ENV",
    "WorkspacePathRefused",
    "existing_target",
    "list_directory",
    "open_beneath",
    "open_directory",
    "open_node",
    "open_parent",
    "open_root",
    "path_parts",
    "refuse_hard_links",
    "replace_file",
    "shown_path",
    "uses_openat2",
    "walk",
]

FORCE_WALK_ENV = "OPENPROGRAM_FS_FORCE_WALK"
"""Set to ``1`` to use the component-by-component walk even where ``openat2`` works."""

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_LIST_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK
_NODE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)


class WorkspacePathRefused(PermissionError):
    """A path was refused: it is not a plain relative path, or it goes through a symlink."""


def _refuse(user_path: str, why: str) -> WorkspacePathRefused:
    return WorkspacePathRefused(f"path {user_path!r} is refused: {why}")


def path_parts(user_path: str) -> tuple[str, ...]:
    """Step 1: the names a relative workspace path is made of, or a refusal."""
    if not isinstance(user_path, str):
        raise _refuse(repr(user_path), f"a path must be a string, not {type(user_path).__name__}")
    if user_path == "":
        raise _refuse(user_path, "it is empty; use '.' for the workspace itself")
    if "\x00" in user_path:
        raise _refuse(user_path, "it contains a NUL byte")
    if user_path.startswith("~"):
        raise _refuse(user_path, "'~' is not expanded; use a path relative to the workspace")
    if user_path.startswith("/"):
        raise _refuse(
            user_path, "absolute paths are not accepted; use a path relative to the workspace"
        )
    parts = tuple(part for part in user_path.split("/") if part not in ("", "."))
    if ".." in parts:
        raise _refuse(user_path, "'..' is not accepted; use a path relative to the workspace")
    return parts


def shown_path(parts: Sequence[str]) -> str:
    """A path as the model should write it back: relative to the workspace, ``.`` for it."""
    return "/".join(parts) or "."


def open_root(directory: Path) -> int:
    """Step 2: an ``O_PATH`` descriptor of the workspace (or another trusted directory)."""
    try:
        return os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        # The message reaches the model: the reason, never the server's path.
        raise WorkspacePathRefused(
            f"the workspace is not usable: {exc.strerror or type(exc).__name__}"
        ) from None


# --- step 3: openat2, or the walk ----------------------------------------------------


_openat2_works: bool | None = None


def _probe_openat2() -> bool:
    try:
        directory = os.open("/", _DIR_FLAGS)
    except OSError:
        return False
    try:
        os.close(_openat2(directory, ".", _DIR_FLAGS, 0))
    except (OSError, AttributeError):
        return False  # ENOSYS (old kernel), EPERM (seccomp), EINVAL/E2BIG (older struct)
    finally:
        os.close(directory)
    return True


def uses_openat2() -> bool:
    """Whether step 3 uses ``openat2`` here (not forced off, and the kernel allows it)."""
    global _openat2_works
    if os.environ.get(FORCE_WALK_ENV, "") == "1":
        return False
    if _openat2_works is None:
        _openat2_works = _probe_openat2()
    return _openat2_works


def _walk_open(dir_fd: int, parts: Sequence[str], flags: int, mode: int) -> int:
    """Step 3's fallback: one component at a time, never following a symlink."""
    if not parts:
        return os.open(".", flags, dir_fd=dir_fd)
    current = dir_fd
    try:
        for part in parts[:-1]:
            following = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=current)
            if current != dir_fd:
                os.close(current)
            current = following
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=current)
    finally:
        if current != dir_fd:
            os.close(current)


def _symlink_in(dir_fd: int, parts: Sequence[str]) -> str | None:
    """For the message only: the first component that is a symlink now, if any."""
    for end in range(1, len(parts) + 1):
        try:
            st = os.stat("/".join(parts[:end]), dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return "/".join(parts[:end])
    return None


def open_beneath(
    dir_fd: int,
    parts: Sequence[str],
    *,
    user_path: str,
    flags: int = _NODE_FLAGS,
    mode: int = 0o666,
    prefix: Sequence[str] = (),
) -> int:
    """Step 3: open ``parts`` below ``dir_fd`` following no symlink; a new descriptor.

    ``prefix`` is where ``dir_fd`` itself lies in the workspace (for messages only).
    """
    if flags & _O_PATH and _O_PATH != os.O_RDONLY and not flags & os.O_DIRECTORY:
        # O_PATH | O_NOFOLLOW would open a trailing symlink itself instead of refusing it.
        raise ValueError("an O_PATH open below the workspace must be O_DIRECTORY")
    flags |= os.O_CLOEXEC
    try:
        if uses_openat2():
            return _openat2(dir_fd, "/".join(parts) or ".", flags, mode)
        return _walk_open(dir_fd, parts, flags, mode)
    except OSError as exc:
        raise _explained(exc, dir_fd, parts, user_path=user_path, prefix=prefix) from None


def _explained(
    exc: OSError, dir_fd: int, parts: Sequence[str], *, user_path: str, prefix: Sequence[str]
) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
        link = _symlink_in(dir_fd, parts)
        if link is not None:
            return _refuse(
                user_path,
                f"{shown_path([*prefix, link])!r} is a symbolic link; the file tools follow "
                "no symlinks (bash does, inside its sandbox)",
            )
        if exc.errno in (errno.ELOOP, errno.EXDEV):
            return _refuse(user_path, "it went through a symbolic link while it was opened")
    if exc.errno == errno.ENOENT:
        return FileNotFoundError(
            errno.ENOENT, f"no such file or directory in the workspace: {user_path!r}"
        )
    if exc.errno == errno.ENOTDIR:
        return NotADirectoryError(
            errno.ENOTDIR, f"{user_path!r} goes through something that is not a directory"
        )
    return OSError(exc.errno, f"{exc.strerror}: {user_path!r}")


# --- step 4: what was opened -----------------------------------------------------------


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_node(
    dir_fd: int, parts: Sequence[str], *, user_path: str, prefix: Sequence[str] = ()
) -> tuple[int, os.stat_result]:
    """Step 4: a regular file or a directory, opened for reading, with its ``fstat``."""
    fd = open_beneath(dir_fd, parts, user_path=user_path, flags=_NODE_FLAGS, prefix=prefix)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise ValueError(
                f"{user_path!r} is not a regular file ({_kind(st.st_mode)}); the file tools "
                "open regular files and directories only"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, st


# --- step 5: writing -------------------------------------------------------------------


def open_directory(
    root_fd: int,
    parts: Sequence[str],
    *,
    user_path: str,
    create: bool = False,
    mode: int = 0o777,
    readable: bool = False,
) -> int:
    """Step 5: a descriptor of the directory ``parts`` (``O_PATH``, or one ``os.scandir``
    can list when ``readable``), its missing components made when ``create`` says so."""
    flags = _LIST_FLAGS if readable else _DIR_FLAGS
    try:
        return open_beneath(root_fd, parts, user_path=user_path, flags=flags)
    except FileNotFoundError:
        if not create:
            raise
    current = os.dup(root_fd)
    try:
        for depth, part in enumerate(parts):
            try:
                os.mkdir(part, mode, dir_fd=current)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _explained(
                    exc, root_fd, parts[: depth + 1], user_path=user_path, prefix=()
                ) from None
            last = depth == len(parts) - 1
            following = open_beneath(
                current,
                (part,),
                user_path=user_path,
                flags=flags if last else _DIR_FLAGS,
                prefix=parts[:depth],
            )
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def open_parent(root_fd: int, parts: Sequence[str], *, user_path: str, create: bool) -> int:
    """Step 5: an ``O_PATH`` descriptor of the directory that holds ``parts[-1]``."""
    return open_directory(root_fd, parts[:-1], user_path=user_path, create=create)


def existing_target(dir_fd: int, parts: Sequence[str], *, user_path: str) -> os.stat_result | None:
    """Step 5: what is at ``name`` now (never followed), refused unless a lone regular file.

    The answer only shapes the message and the new file's mode: the write itself is a
    rename in ``dir_fd``, which replaces whatever entry is there and follows none.
    """
    try:
        st = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(
            user_path,
            f"{shown_path(parts)!r} is a symbolic link; the file tools follow no symlinks "
            "(bash does, inside its sandbox)",
        )
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{user_path!r} is a directory; give a file path")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"{user_path!r} is not a regular file ({_kind(st.st_mode)}); only regular files "
            "are written"
        )
    refuse_hard_links(st, user_path=user_path)
    return st


def refuse_hard_links(st: os.stat_result, *, user_path: str) -> None:
    if st.st_nlink > 1:
        raise _refuse(
            user_path,
            f"it has {st.st_nlink} hard links; the file tools do not change a file that "
            "also lives under another name",
        )


def replace_file(dir_fd: int, name: str, data: bytes, *, mode: int | None = None) -> os.stat_result:
    """Step 5: ``data`` becomes the file ``name`` in ``dir_fd``, atomically; its ``fstat``.

    ``mode`` keeps an existing file's permissions; a new file gets ``0o666`` less the
    umask, as ``open()`` would give it.
    """
    temporary = f".{name[:100]}.{uuid.uuid4().hex[:12]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o666, dir_fd=dir_fd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, stat.S_IMODE(mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            written = os.fstat(fd)
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
    return written


# --- step 6: walking -------------------------------------------------------------------


def walk(
    root_fd: int,
    top: Sequence[str],
    *,
    top_fd: int | None = None,
    skip: frozenset[str] = frozenset(),
) -> Iterator[tuple[tuple[str, ...], int, list[os.DirEntry[str]]]]:
    """Step 6: ``(parts, descriptor, entries sorted by name)`` for ``top`` and every
    directory below it, top-down. ``top_fd``, when given, is ``top`` already opened for
    reading (it stays open). Directories named in ``skip`` are not entered, nor is one
    that is no longer a directory when its turn comes. Each descriptor is valid until the
    next item is asked for."""
    pending: list[tuple[str, ...]] = [tuple(top)]
    while pending:
        parts = pending.pop()
        if top_fd is not None and len(parts) == len(top):
            fd = top_fd
        else:
            try:
                fd = open_beneath(root_fd, parts, user_path=shown_path(parts), flags=_LIST_FLAGS)
            except OSError:
                if len(parts) == len(top):
                    raise
                continue  # swapped for a symlink or removed since it was listed
        try:
            entries = list_directory(fd)
            below = [
                (*parts, entry.name)
                for entry in reversed(entries)
                if entry.name not in skip and entry.is_dir(follow_symlinks=False)
            ]
            yield parts, fd, entries
        finally:
            if fd != top_fd:
                os.close(fd)
        pending.extend(below)


def list_directory(fd: int) -> list[os.DirEntry[str]]:
    """The entries of a directory opened for reading, sorted by name."""
    with os.scandir(fd) as scan:
        return sorted(scan, key=lambda entry: entry.name)
