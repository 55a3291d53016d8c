"""The ``read`` tool: a text file from the workspace, with line numbers, page by page."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import Field

from openprogram.config import get_config
from openprogram.programs.builtin._fs import looks_binary
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn, current_results_dir
from openprogram.security.workspace_fs import (
    WorkspacePathRefused,
    open_node,
    open_root,
    path_parts,
    shown_path,
)
from openprogram.workspace import current_workspace

__all__ = ["read"]

MAX_LINE_CHARS = 2000
PAGE_CHARS = 40_000
"""Stop a page before the runtime's 50,000-character cap would cut its middle out."""


def _persisted_result(user_path: str) -> tuple[Path, tuple[str, ...]] | None:
    """``(directory, names below it)`` of a full result saved for the current user, or None.

    1. Only an absolute path can name a saved result, and only one written below the
       results directory (compared name by name, as written); anything else is a
       workspace path (None), where an absolute path is then refused.
    2. Below the results directory the path must go into the current user's own
       directory (``results_dir_for_user``) with no ``..``, else it is refused: one
       user's turn never reads another user's results, whatever path it learned.
    3. The file is then opened below that directory's descriptor by
       :mod:`openprogram.security.workspace_fs` (no symlink followed). It is only ever read.
    """
    written = PurePosixPath(user_path) if isinstance(user_path, str) else None
    if written is None or not written.is_absolute():
        return None
    results_parts = PurePosixPath(get_config().results_dir).parts
    if written.parts[: len(results_parts)] != results_parts:
        return None
    own = current_results_dir()
    below = written.parts[len(results_parts) :]
    if not below or below[0] != own.name or ".." in below or len(below) < 2:
        raise WorkspacePathRefused(
            f"path {user_path!r} is refused: it is not one of this user's saved results; "
            "a turn can read only the full results saved for its own user"
        )
    return own, tuple(part for part in below[1:] if part != ".")


def _numbered_page(fd: int, offset: int, limit: int) -> tuple[list[str], int, bool]:
    """``(numbered lines, last line shown, more lines follow)`` starting at ``offset``."""
    lines: list[str] = []
    size = 0
    last = offset - 1
    with open(fd, encoding="utf-8", errors="replace", newline=None, closefd=False) as handle:
        for number, line in enumerate(handle, start=1):
            if number < offset:
                continue
            if len(lines) >= limit or (lines and size + len(line) > PAGE_CHARS):
                return lines, last, True
            text = line.rstrip("\n")
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f" [… line cut at {MAX_LINE_CHARS} characters]"
            lines.append(f"{number:>6}\t{text}")
            size += len(text) + 8
            last = number
    return lines, last, False


@function(toolset=["fs", "fs_read"], max_result_chars=50_000, label="Read file")
def read(
    path: str,
    offset: Annotated[int, Field(ge=1)] = 1,
    limit: Annotated[int, Field(ge=1, le=5000)] = 2000,
) -> ToolReturn:
    """Read a text file from the workspace, with line numbers.

    Returns lines in "cat -n" form (line number, tab, text) starting at line `offset`,
    at most `limit` lines and about 40,000 characters per call; when more follows, the
    result ends with the offset to pass next, so read large files page by page instead
    of all at once. Lines longer than 2,000 characters are cut. Paths are relative to
    the workspace (no absolute paths, no '..', no symlinks); binary files and directories
    are refused (use list_dir for a directory). When another tool's result was too long
    and says "full result saved to <path>", read that path with offset/limit to page
    through the whole text.

    Args:
        path: File to read, relative to the workspace (or a saved full-result path).
        offset: 1-based line number to start from.
        limit: Maximum number of lines to return.
    """
    persisted = _persisted_result(path)
    if persisted is not None:
        directory, parts = persisted
        shown = path
    else:
        directory, parts = current_workspace(), path_parts(path)
        shown = shown_path(parts)
    try:
        root = open_root(directory)
    except WorkspacePathRefused:
        if persisted is not None:  # this user has saved nothing yet
            raise FileNotFoundError(f"no saved result at {path!r}") from None
        raise
    try:
        fd, st = open_node(root, parts, user_path=path)
    except FileNotFoundError:
        if persisted is not None:
            raise FileNotFoundError(f"no saved result at {path!r}") from None
        raise
    finally:
        os.close(root)
    try:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path!r} is a directory; use list_dir to see what it holds")
        if looks_binary(fd):
            raise ValueError(f"{path!r} looks like a binary file; read shows text files only")
        lines, last, more = _numbered_page(fd, offset, limit)
    finally:
        os.close(fd)
    if not lines:
        text = (
            f"{shown!r} is empty."
            if offset == 1
            else f"{shown!r} has fewer than {offset} lines; nothing to show from offset={offset}."
        )
    else:
        text = "\n".join(lines)
        if more:
            text += f"\n[… more lines follow; call read with offset={last + 1} to continue]"
    data = {"path": shown, "first_line": offset, "last_line": last, "more": more}
    # Paging through an already-persisted result must never persist it a second time.
    return ToolReturn(text, data=data, persist=persisted is None)
