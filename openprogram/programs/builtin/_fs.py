"""Helpers the file tools share: the confined path, how paths are shown, text sniffing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from openprogram.security.paths import resolve_in_workspace, resolve_workspace_root
from openprogram.workspace import current_workspace

__all__ = [
    "SKIPPED_DIRS",
    "compile_glob",
    "display",
    "is_binary",
    "looks_binary",
    "walk_files",
    "workspace_path",
    "workspace_root",
]

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})
"""Directories the search tools do not descend into (noise, and often huge)."""
_SNIFF_BYTES = 8192


def workspace_root() -> Path:
    return resolve_workspace_root(current_workspace())


def workspace_path(user_path: str, *, must_exist: bool = False) -> Path:
    """``user_path`` confined to the current workspace (see security/paths.py)."""
    return resolve_in_workspace(current_workspace(), user_path, must_exist=must_exist)


def display(path: Path, root: Path) -> str:
    """A path as the model should write it back: relative to the workspace root."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return "." if relative == Path() else relative.as_posix()


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def is_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return looks_binary(handle.read(_SNIFF_BYTES))


def walk_files(base: Path, root: Path) -> Iterator[Path]:
    """Regular files under ``base`` in sorted order, never leaving ``root``.

    Symlinked directories are not descended into; a symlinked file is yielded only
    when its target is inside the workspace.
    """
    if base.is_file():
        yield base
        return
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(directory, name)
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue
                if not target.is_relative_to(root) or not target.is_file():
                    continue
            elif not path.is_file():
                continue
            yield path


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
