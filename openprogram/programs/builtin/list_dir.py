"""The ``list_dir`` tool: what a workspace directory holds."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import Field

from openprogram.programs.builtin._fs import display, workspace_path, workspace_root
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

__all__ = ["list_dir"]


def _describe(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name} -> {os.readlink(entry.path)}"
    if entry.is_dir(follow_symlinks=False):
        return entry.name + "/"
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return entry.name
    return f"{entry.name}  ({size:,} bytes)"


@function(toolset=["fs", "fs_read"], label="List directory")
def list_dir(
    path: str = ".",
    max_entries: Annotated[int, Field(ge=1, le=5000)] = 1000,
) -> ToolReturn:
    """List the entries of a directory in the workspace (not recursive).

    Directories end with `/`, files show their size, symlinks show where they point.
    Entries are sorted by name, at most `max_entries` of them. The default lists the
    workspace root. Use glob to find files at any depth and read to open one.

    Args:
        path: Directory to list, relative to the workspace.
        max_entries: Maximum number of entries to return.
    """
    root = workspace_root()
    target = workspace_path(path, must_exist=True)
    if not target.is_dir():
        raise NotADirectoryError(f"{path!r} is a file, not a directory; use read to open it")
    with os.scandir(target) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    lines = [_describe(entry) for entry in entries[:max_entries]]
    shown = display(target, root)
    if not lines:
        text = f"{shown!r} is empty."
    else:
        text = f"{shown}/\n" + "\n".join(lines)
        if len(entries) > max_entries:
            text += f"\n[… {len(entries) - max_entries:,} more entries not shown]"
    return ToolReturn(text, data={"path": shown, "entries": len(entries)})
