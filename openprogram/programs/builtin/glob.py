"""The ``glob`` tool: find workspace paths by name pattern."""

from __future__ import annotations

import os
import stat
import threading
from typing import Annotated

from pydantic import Field

from openprogram.programs.builtin._fs import SKIPPED_DIRS, compile_glob, workspace_fd
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.workspace_fs import open_node, path_parts, shown_path, walk

__all__ = ["glob"]


@function(toolset=["fs", "fs_read"], timeout=60, label="Find files")
def glob(
    pattern: str,
    path: str = ".",
    max_results: Annotated[int, Field(ge=1, le=2000)] = 500,
    cancel: threading.Event | None = None,
) -> ToolReturn:
    """Find files and directories in the workspace whose path matches a glob pattern.

    Patterns are matched against paths relative to `path` (default: the workspace root):
    `*` and `?` match within one path segment, `**/` matches any number of directories,
    `[abc]` and `{py,md}` work too. So `*.py` finds Python files in that directory only,
    and `**/*.py` finds them at any depth. Results are sorted, directories end with `/`,
    and at most `max_results` are returned. Symlinks are listed, never followed, and
    .git, node_modules, .venv and __pycache__ are skipped. Use grep to search inside files.

    Args:
        pattern: Glob pattern relative to `path`, for example "**/*.md".
        path: Directory to search from, relative to the workspace.
        max_results: Maximum number of paths to return.
    """
    matcher = compile_glob(pattern)
    parts = path_parts(path)
    matches: list[str] = []
    with workspace_fd() as root:
        fd, st = open_node(root, parts, user_path=path)
        try:
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(f"{path!r} is not a directory; glob searches directories")
            for directory, _fd, entries in walk(root, parts, top_fd=fd, skip=SKIPPED_DIRS):
                if cancel is not None and cancel.is_set():
                    break  # the call timed out or was stopped; the runtime already answered
                relative_dir = directory[len(parts) :]
                for entry in entries:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if is_dir and entry.name in SKIPPED_DIRS:
                        continue
                    if matcher.match("/".join((*relative_dir, entry.name))):
                        shown = shown_path((*directory, entry.name))
                        matches.append(shown + "/" if is_dir else shown)
        finally:
            os.close(fd)
    matches.sort()
    total = len(matches)
    shown_matches = matches[:max_results]
    if not shown_matches:
        text = f"No paths match {pattern!r} under {shown_path(parts)!r}."
    else:
        text = "\n".join(shown_matches)
        if total > max_results:
            text += (
                f"\n[… {total - max_results:,} more matches not shown; "
                "narrow the pattern or raise max_results]"
            )
    return ToolReturn(text, data={"matches": shown_matches, "total": total})
