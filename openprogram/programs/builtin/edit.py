"""The ``edit`` tool: exact string replacement in a workspace file."""

from __future__ import annotations

import os
import stat

from openprogram.programs.builtin._fs import quota_write, workspace_fd
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.workspace_fs import (
    open_node,
    open_parent,
    path_parts,
    refuse_hard_links,
    replace_file,
    shown_path,
)
from openprogram.security.workspace_quota import estimate, file_bytes

__all__ = ["edit"]


class EditFailed(ValueError):
    """The replacement could not be made as asked; the message says how to fix the call."""


@function(toolset=["fs"], unsafe_in=["plan"], label="Edit file")
def edit(path: str, old_string: str, new_string: str, replace_all: bool = False) -> ToolReturn:
    """Replace an exact piece of text in a workspace file.

    `old_string` must match the file's text exactly, including whitespace and
    indentation (do not include the line-number prefixes read shows). It must occur
    exactly once unless `replace_all` is true; when it occurs several times, add
    surrounding lines to make it unique or set replace_all. The call fails, changing
    nothing, when the text is absent or ambiguous. Read the file first so the match is
    exact. To create a file or replace all of it, use write.

    Args:
        path: File to change, relative to the workspace.
        old_string: The exact text to find (non-empty).
        new_string: The text to put in its place (must differ from old_string).
        replace_all: Replace every occurrence instead of requiring exactly one.
    """
    if old_string == "":
        raise EditFailed("old_string is empty; give the exact text to replace")
    if old_string == new_string:
        raise EditFailed("old_string and new_string are identical; nothing would change")
    parts = path_parts(path)
    if not parts:
        raise IsADirectoryError(f"{path!r} is the workspace itself; give a file path to edit")
    with workspace_fd() as root:
        directory = open_parent(root, parts, user_path=path, create=False)
        try:
            return _edit_in(directory, parts, path, old_string, new_string, replace_all)
        finally:
            os.close(directory)


def _edit_in(
    directory: int,
    parts: tuple[str, ...],
    path: str,
    old_string: str,
    new_string: str,
    replace_all: bool,
) -> ToolReturn:
    """The edit, on the file opened once in its directory's descriptor."""
    fd, st = open_node(directory, parts[-1:], user_path=path, prefix=parts[:-1])
    try:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path!r} is a directory; give a file path to edit")
        refuse_hard_links(st, user_path=path)
        try:
            # newline="" keeps the file's own line endings (\r\n stays \r\n).
            with open(fd, encoding="utf-8", newline="", closefd=False) as handle:
                text = handle.read()
        except UnicodeDecodeError:
            raise EditFailed(f"{path!r} is not UTF-8 text; edit changes text files only") from None
    finally:
        os.close(fd)
    count = text.count(old_string)
    if count == 0:
        raise EditFailed(
            f"old_string was not found in {path!r}; read the file and copy the text exactly "
            "(whitespace and indentation included)"
        )
    if count > 1 and not replace_all:
        raise EditFailed(
            f"old_string occurs {count} times in {path!r}; add surrounding lines to make it "
            "unique, or pass replace_all=true to replace every occurrence"
        )
    first_line = text[: text.index(old_string)].count("\n") + 1
    updated = (
        text.replace(old_string, new_string)
        if replace_all
        else text.replace(old_string, new_string, 1)
    )
    data = updated.encode("utf-8")
    with quota_write(adds=estimate(len(data)) - file_bytes(st)) as settle:
        written = replace_file(directory, parts[-1], data, mode=st.st_mode)
        settle(file_bytes(written) - file_bytes(st))
    shown = shown_path(parts)
    replaced = count if replace_all else 1
    return ToolReturn(
        f"Replaced {replaced} occurrence{'s' if replaced != 1 else ''} in {shown} "
        f"(first at line {first_line}).",
        data={"path": shown, "replacements": replaced, "first_line": first_line},
    )
