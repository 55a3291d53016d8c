"""Helpers the file tools share: the workspace's descriptor, text sniffing, glob patterns.

Every workspace path is opened through :mod:`openprogram.security.workspace_fs`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from openprogram.security import workspace_quota
from openprogram.security.workspace_fs import open_root
from openprogram.workspace import current_workspace

__all__ = ["SKIPPED_DIRS", "compile_glob", "looks_binary", "quota_write", "workspace_fd"]

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})
"""Directories the search tools do not descend into (noise, and often huge)."""
SNIFF_BYTES = 8192


def quota_write(*, adds: int) -> AbstractContextManager[Callable[[int], None]]:
    """The current workspace's quota held for a write (security/workspace_quota.py)."""
    return workspace_quota.quota_write(current_workspace(), adds=adds)


@contextmanager
def workspace_fd() -> Iterator[int]:
    """The current workspace's root descriptor, for the length of one tool call."""
    fd = open_root(current_workspace())
    try:
        yield fd
    finally:
        os.close(fd)


def looks_binary(fd: int) -> bool:
    """Whether the open file's first bytes hold a NUL (its offset is left where it was)."""
    return b"\x00" in os.pread(fd, SNIFF_BYTES, 0)


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay within one path segment, ``**/`` spans any number of
    directories (including none), ``[abc]``/``[!abc]`` are character classes and
    ``{a,b}`` alternatives. Absolute patterns, ``~`` and ``..`` segments are refused so
    a pattern can never point outside the directory it is applied to.
    """
    if not pattern or "\x00" in pattern:
        raise ValueError(f"glob pattern {pattern!r} is empty or contains a NUL byte")
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise ValueError(
            f"glob pattern {pattern!r} must be relative and must not contain '..' segments"
        )
    return re.compile(r"(?s:" + _glob_body(pattern) + r")\Z")


def _glob_body(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
            continue
        if char == "{" and (end := pattern.find("}", i)) != -1:
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_body(option) for option in options) + ")")
            i = end + 1
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(char) or re.escape(char))
        i += 1
    return "".join(out)
