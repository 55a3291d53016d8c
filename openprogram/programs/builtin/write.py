"""The ``write`` tool: create or overwrite a text file inside the workspace."""

from __future__ import annotations

from openprogram.programs.builtin._fs import display, workspace_path, workspace_root
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

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
    root = workspace_root()
    target = workspace_path(path)
    if target == root or target.is_dir():
        raise IsADirectoryError(f"{path!r} is a directory; give a file path to write")
    existed = target.exists()
    if existed and not target.is_file():
        raise ValueError(f"{path!r} is not a regular file; write replaces regular files only")
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    target.write_bytes(data)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    verb = "Overwrote" if existed else "Created"
    shown = display(target, root)
    return ToolReturn(
        f"{verb} {shown} ({len(data):,} bytes, {lines:,} lines).",
        data={"path": shown, "bytes": len(data), "created": not existed},
    )
