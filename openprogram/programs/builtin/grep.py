"""The ``grep`` tool: regex search over workspace files, with context lines."""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import closing
from typing import Annotated

from pydantic import Field

from openprogram.programs.builtin._fs import SKIPPED_DIRS, compile_glob, looks_binary, workspace_fd
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.workspace_fs import open_node, path_parts, shown_path, walk

__all__ = ["grep"]

MAX_FILE_BYTES = 10_000_000
"""Bigger files are skipped: they are data, not source, and would stall the search."""
MAX_LINE_CHARS = 500


class _Output:
    """Collects ripgrep-style lines: ``path:N:text`` for matches, ``path-N-text`` context."""

    def __init__(self, max_matches: int) -> None:
        self.lines: list[str] = []
        self.matches = 0
        self.files_with_matches = 0
        self.max_matches = max_matches

    @property
    def full(self) -> bool:
        return self.matches >= self.max_matches


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " […]"


def _search_file(fd: int, shown: str, regex: re.Pattern[str], context: int, out: _Output) -> None:
    before: deque[tuple[int, str]] = deque(maxlen=context)
    after_left = 0
    last_printed = 0
    found = False
    with open(fd, encoding="utf-8", errors="replace", closefd=False) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\n")
            if regex.search(line) and not out.full:
                if not found:
                    found = True
                    out.files_with_matches += 1
                    if out.lines:
                        out.lines.append("--")
                elif context and before and before[0][0] > last_printed + 1:
                    out.lines.append("--")
                out.lines.extend(f"{shown}-{n}-{_clip(text)}" for n, text in before)
                before.clear()
                out.lines.append(f"{shown}:{number}:{_clip(line)}")
                out.matches += 1
                last_printed = number
                after_left = context
            elif after_left:
                out.lines.append(f"{shown}-{number}-{_clip(line)}")
                last_printed = number
                after_left -= 1
            elif out.full:
                return
            elif context:
                before.append((number, line))


def _files(root: int, parts: tuple[str, ...], path: str) -> Iterator[tuple[int, str, str]]:
    """``(open descriptor, path relative to the search base, path to show)`` of each
    regular file to search, in sorted order; each descriptor is closed when the next
    one is asked for. Symlinks and anything but regular files are skipped."""
    fd, st = open_node(root, parts, user_path=path)
    try:
        if not stat.S_ISDIR(st.st_mode):
            yield fd, parts[-1], shown_path(parts)
            return
        for directory, directory_fd, entries in walk(root, parts, top_fd=fd, skip=SKIPPED_DIRS):
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    continue
                name = (*directory, entry.name)
                try:
                    file_fd, file_st = open_node(
                        directory_fd, (entry.name,), user_path=shown_path(name), prefix=directory
                    )
                except (OSError, ValueError):
                    continue  # replaced since it was listed (a symlink, a FIFO, gone)
                try:
                    if stat.S_ISREG(file_st.st_mode):
                        yield file_fd, "/".join(name[len(parts) :]), shown_path(name)
                finally:
                    os.close(file_fd)
    finally:
        os.close(fd)


@function(toolset=["fs", "fs_read"], timeout=60, label="Search files")
def grep(
    pattern: str,
    path: str = ".",
    include: str | None = None,
    context: Annotated[int, Field(ge=0, le=20)] = 0,
    ignore_case: bool = False,
    max_matches: Annotated[int, Field(ge=1, le=2000)] = 200,
    cancel: threading.Event | None = None,
) -> ToolReturn:
    """Search the text of workspace files for a regular expression (Python `re` syntax).

    Each matching line comes back as `path:line:text`, with `context` lines before and
    after shown as `path-line-text` and separate groups divided by `--`. Searches a file
    or a whole directory tree (default: the workspace root), optionally only files whose
    name matches `include` (a glob like "*.py", or "src/**/*.ts" for a path). Binary
    files, files over 10 MB, symlinks (never followed), and .git,
    node_modules, .venv and __pycache__ are skipped. Stops after `max_matches` matches
    and says so; narrow the pattern or path to see the rest.

    Args:
        pattern: Regular expression to look for, matched against each line.
        path: File or directory to search, relative to the workspace.
        include: Only search files matching this glob (name, or path with a "/").
        context: Lines of context to show before and after each match.
        ignore_case: Match letters regardless of case.
        max_matches: Stop after this many matching lines.
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from None
    include_regex = compile_glob(include) if include else None
    parts = path_parts(path)
    out = _Output(max_matches)
    searched = 0
    with workspace_fd() as root, closing(_files(root, parts, path)) as files:
        for fd, relative, shown in files:
            if cancel is not None and cancel.is_set():
                break
            if include_regex is not None and not include_regex.match(
                relative if "/" in (include or "") else relative.rpartition("/")[2]
            ):
                continue
            try:
                if os.fstat(fd).st_size > MAX_FILE_BYTES or looks_binary(fd):
                    continue
                searched += 1
                _search_file(fd, shown, regex, context, out)
            except OSError:
                continue  # unreadable (permissions, an I/O error): skip it, keep searching
            if out.full:
                break
    if not out.matches:
        text = f"No matches for {pattern!r} in {searched:,} file(s) under {shown_path(parts)!r}."
    else:
        text = "\n".join(out.lines)
        if out.full:
            text += f"\n[… stopped at {max_matches} matches; narrow the pattern or the path]"
    return ToolReturn(
        text,
        data={
            "matches": out.matches,
            "files_with_matches": out.files_with_matches,
            "files_searched": searched,
            "capped": out.full,
        },
    )
