"""The ``read`` tool: a text file from the workspace, with line numbers, page by page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from openprogram.config import get_config
from openprogram.programs.builtin._fs import display, is_binary, workspace_path, workspace_root
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn, current_results_dir
from openprogram.security.paths import PathOutsideWorkspace, resolve_in_workspace

__all__ = ["read"]

MAX_LINE_CHARS = 2000
PAGE_CHARS = 40_000
"""Stop a page before the runtime's 50,000-character cap would cut its middle out."""


def _persisted_result(user_path: str) -> Path | None:
    """A full tool result the runtime saved for the current user, or None.

    1. Only an absolute path can name a saved result; anything else is a workspace path.
    2. A path that does not resolve inside the results directory is a workspace path
       too (None), left to the workspace confinement.
    3. Inside the results directory it must resolve inside the current user's own
       directory (``results_dir_for_user``), else it is refused: one user's turn never
       reads another user's results, whatever path it learned.
    4. It must exist (``FileNotFoundError`` otherwise). It is only ever read.
    """
    if not Path(user_path).is_absolute():
        return None
    results_dir = get_config().results_dir
    if not results_dir.is_dir():
        return None
    try:
        resolved = resolve_in_workspace(results_dir, user_path)
    except PathOutsideWorkspace:
        return None
    own = current_results_dir()
    if not resolved.is_relative_to(own.resolve()):
        raise PathOutsideWorkspace(
            f"path {user_path!r} is refused: it is not one of this user's saved results; "
            "a turn can read only the full results saved for its own user"
        )
    if not own.is_dir():
        raise FileNotFoundError(f"no saved result at {user_path!r}")
    return resolve_in_workspace(own, user_path, must_exist=True)


def _numbered_page(path: Path, offset: int, limit: int) -> tuple[list[str], int, bool]:
    """``(numbered lines, last line shown, more lines follow)`` starting at ``offset``."""
    lines: list[str] = []
    size = 0
    last = offset - 1
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
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
    the workspace (absolute paths must stay inside it); binary files and directories
    are refused (use list_dir for a directory). When another tool's result was too long
    and says "full result saved to <path>", read that path with offset/limit to page
    through the whole text.

    Args:
        path: File to read, relative to the workspace (or a saved full-result path).
        offset: 1-based line number to start from.
        limit: Maximum number of lines to return.
    """
    persisted = _persisted_result(path)
    root = workspace_root()
    target = persisted or workspace_path(path, must_exist=True)
    if target.is_dir():
        raise IsADirectoryError(f"{path!r} is a directory; use list_dir to see what it holds")
    if not target.is_file():
        # A FIFO or device would block the read forever.
        raise ValueError(f"{path!r} is not a regular file; read opens regular files only")
    if is_binary(target):
        raise ValueError(f"{path!r} looks like a binary file; read shows text files only")
    lines, last, more = _numbered_page(target, offset, limit)
    shown = str(target) if persisted else display(target, root)
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
