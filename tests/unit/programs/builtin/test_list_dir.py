"""list_dir: one directory's entries, sorted, inside the workspace."""

from __future__ import annotations

import os

from openprogram.programs.builtin.list_dir import list_dir


async def test_it_lists_entries_with_kinds_and_sizes(turn, workspace, call):
    (workspace / "b.txt").write_text("12345")
    (workspace / "a").mkdir()
    (workspace / "l").symlink_to("b.txt")
    result = await call(list_dir, {})
    assert result.content.splitlines() == ["./", "a/", "b.txt  (5 bytes)", "l -> b.txt"]


async def test_it_caps_entries(turn, workspace, call):
    for n in range(12):
        (workspace / f"f{n:02}").write_text("")
    result = await call(list_dir, {"path": ".", "max_entries": 5})
    assert "7 more entries" in result.content and result.details["entries"] == 12


async def test_it_refuses_outside_paths_and_files(turn, workspace, call, tmp_path):
    (workspace / "f.txt").write_text("")
    assert (await call(list_dir, {"path": ".."})).is_error
    assert (await call(list_dir, {"path": str(tmp_path)})).is_error
    file_result = await call(list_dir, {"path": "f.txt"})
    assert file_result.is_error and "use read" in file_result.content


async def test_an_empty_directory_says_so(turn, workspace, call):
    result = await call(list_dir, {"path": "."})
    assert "is empty" in result.content


async def test_a_fifo_is_listed_without_blocking_and_a_symlinked_dir_is_refused(
    turn, workspace, call, tmp_path
):
    os.mkfifo(workspace / "pipe")
    (workspace / "out").symlink_to(tmp_path)
    listed = await call(list_dir, {})
    assert "pipe" in listed.content
    refused = await call(list_dir, {"path": "out"})
    assert refused.is_error and "'out' is a symbolic link" in refused.content
