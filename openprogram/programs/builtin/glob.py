"""The ``glob`` tool: find workspace paths by name pattern."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Annotated

from pydantic import Field

from openprogram.programs.builtin._fs import (
    SKIPPED_DIRS,
    compile_glob,
    display,
    workspace_path,
    workspace_root,
)
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

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
    and at most `max_results` are returned. Symlinked directories are not followed, and
    .git, node_modules, .venv and __pycache__ are skipped. Use grep to search inside files.

    Args:
        pattern: Glob pattern relative to `path`, for example "**/*.md".
        path: Directory to search from, relative to the workspace.
        max_results: Maximum number of paths to return.
    """
    matcher = compile_glob(pattern)
    root = workspace_root()
    base = workspace_path(path, must_exist=True)
    if not base.is_dir():
        raise NotADirectoryError(f"{path!r} is not a directory; glob searches directories")
    matches: list[str] = []
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        if cancel is not None and cancel.is_set():
            break  # the call timed out or was stopped; the runtime already answered
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
        relative_dir = Path(directory).relative_to(base)
        for name, is_dir in [*((d, True) for d in dirnames), *((f, False) for f in filenames)]:
            relative = (relative_dir / name).as_posix()
            if matcher.match(relative):
                shown = display(Path(directory, name), root)
                matches.append(shown + "/" if is_dir else shown)
    matches.sort()
    total = len(matches)
    shown_matches = matches[:max_results]
    if not shown_matches:
        text = f"No paths match {pattern!r} under {display(base, root)!r}."
    else:
        text = "\n".join(shown_matches)
        if total > max_results:
            text += (
                f"\n[… {total - max_results:,} more matches not shown; "
                "narrow the pattern or raise max_results]"
            )
    return ToolReturn(text, data={"matches": shown_matches, "total": total})
