"""The ``list_dir`` tool: what a workspace directory holds."""

from __future__ import annotations

import os
import stat
from typing import Annotated

from pydantic import Field

from openprogram.programs.builtin._fs import workspace_fd
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.workspace_fs import list_directory, open_node, path_parts, shown_path

__all__ = ["list_dir"]


def _describe(directory: int, entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {os.readlink(entry.name, dir_fd=directory)}"
        except OSError:  # replaced since it was listed
            return entry.name
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

    Directories end with `/`, files show their size, symlinks show where they point
    (the file tools do not follow symlinks; bash does).
    Entries are sorted by name, at most `max_entries` of them. The default lists the
    workspace root. Use glob to find files at any depth and read to open one.

    Args:
        path: Directory to list, relative to the workspace.
        max_entries: Maximum number of entries to return.
    """
    parts = path_parts(path)
    with workspace_fd() as root:
        fd, st = open_node(root, parts, user_path=path)
    try:
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f"{path!r} is a file, not a directory; use read to open it")
        entries = list_directory(fd)
        lines = [_describe(fd, entry) for entry in entries[:max_entries]]
    finally:
        os.close(fd)
    shown = shown_path(parts)
    if not lines:
        text = f"{shown!r} is empty."
    else:
        text = f"{shown}/\n" + "\n".join(lines)
        if len(entries) > max_entries:
            text += f"\n[… {len(entries) - max_entries:,} more entries not shown]"
    return ToolReturn(text, data={"path": shown, "entries": len(entries)})
