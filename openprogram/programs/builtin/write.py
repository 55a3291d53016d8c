"""The ``write`` tool: create or overwrite a text file inside the workspace."""

from __future__ import annotations

import os

from openprogram.programs.builtin._fs import quota_write, workspace_fd
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.workspace_fs import (
    existing_target,
    open_parent,
    path_parts,
    replace_file,
    shown_path,
)
from openprogram.security.workspace_quota import estimate, file_bytes

__all__ = ["write"]


@function(toolset=["fs"], unsafe_in=["plan"], label="Write file")
def write(path: str, content: str) -> ToolReturn:
    """Create a file in the workspace, or replace an existing file's whole content.

    Parent directories are created as needed, always inside the workspace. The file is
    written as UTF-8 exactly as given (no trailing newline is added). This replaces
    everything in an existing file: to change part of a file, read it and use edit
    instead. Paths outside the workspace are refused.

    Args:
        path: File to write, relative to the workspace.
        content: The complete new content of the file.
    """
    parts = path_parts(path)
    if not parts:
        raise IsADirectoryError(f"{path!r} is the workspace itself; give a file path to write")
    data = content.encode("utf-8")
    with workspace_fd() as root:
        directory = open_parent(root, parts, user_path=path, create=True)
        try:
            existing = existing_target(directory, parts, user_path=path)
            with quota_write(adds=estimate(len(data)) - file_bytes(existing)) as settle:
                written = replace_file(
                    directory, parts[-1], data, mode=existing.st_mode if existing else None
                )
                settle(file_bytes(written) - file_bytes(existing))
        finally:
            os.close(directory)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existing else "Created"
    shown = shown_path(parts)
    return ToolReturn(
        f"{verb} {shown} ({len(data):,} bytes, {lines:,} lines).",
        data={"path": shown, "bytes": len(data), "created": existing is None},
    )
