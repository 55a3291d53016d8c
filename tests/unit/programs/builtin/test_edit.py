"""edit: exact, unique replacement — or a clear failure that changes nothing."""

from __future__ import annotations

import os

from openprogram.programs.builtin.edit import edit


async def test_it_replaces_a_unique_string(turn, workspace, call):
    (workspace / "m.py").write_text("a = 1\nb = 2\n")
    result = await call(edit, {"path": "m.py", "old_string": "b = 2", "new_string": "b = 3"})
    assert not result.is_error
    assert (workspace / "m.py").read_text() == "a = 1\nb = 3\n"
    assert "first at line 2" in result.content


async def test_it_fails_clearly_when_the_string_is_absent(turn, workspace, call):
    (workspace / "m.py").write_text("a = 1\n")
    result = await call(edit, {"path": "m.py", "old_string": "zzz", "new_string": "y"})
    assert result.is_error and "not found" in result.content
    assert (workspace / "m.py").read_text() == "a = 1\n"


async def test_it_says_how_many_matches_and_offers_replace_all(turn, workspace, call):
    (workspace / "m.py").write_text("x\nx\nx\n")
    result = await call(edit, {"path": "m.py", "old_string": "x", "new_string": "y"})
    assert (
        result.is_error and "occurs 3 times" in result.content and "replace_all" in result.content
    )
    assert (workspace / "m.py").read_text() == "x\nx\nx\n"
    result = await call(
        edit, {"path": "m.py", "old_string": "x", "new_string": "y", "replace_all": True}
    )
    assert not result.is_error and result.details["replacements"] == 3
    assert (workspace / "m.py").read_text() == "y\ny\ny\n"


async def test_it_keeps_windows_line_endings(turn, workspace, call):
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await call(edit, {"path": "w.txt", "old_string": "two", "new_string": "2"})
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\n"


async def test_it_refuses_empty_or_identical_strings_and_missing_files(turn, workspace, call):
    (workspace / "m.py").write_text("a")
    empty = await call(edit, {"path": "m.py", "old_string": "", "new_string": "b"})
    assert empty.is_error and "empty" in empty.content
    same = await call(edit, {"path": "m.py", "old_string": "a", "new_string": "a"})
    assert same.is_error and "identical" in same.content
    missing = await call(edit, {"path": "nope.py", "old_string": "a", "new_string": "b"})
    assert missing.is_error and "'nope.py'" in missing.content


async def test_it_refuses_files_outside_the_workspace(turn, workspace, call, tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("keep me")
    result = await call(edit, {"path": str(outside), "old_string": "keep", "new_string": "lose"})
    assert result.is_error
    assert outside.read_text() == "keep me"


async def test_it_refuses_non_utf8_files(turn, workspace, call):
    (workspace / "latin.txt").write_bytes(b"caf\xe9")
    result = await call(edit, {"path": "latin.txt", "old_string": "caf", "new_string": "x"})
    assert result.is_error and "UTF-8" in result.content
    assert (workspace / "latin.txt").read_bytes() == b"caf\xe9"


async def test_it_refuses_a_hard_linked_file(turn, workspace, call, tmp_path):
    other = tmp_path / "other-name.txt"
    other.write_text("a = 1\n")
    os.link(other, workspace / "hard.py")
    result = await call(edit, {"path": "hard.py", "old_string": "1", "new_string": "2"})
    assert result.is_error and "2 hard links" in result.content
    assert other.read_text() == "a = 1\n"


async def test_it_refuses_a_symlink_and_a_fifo(turn, workspace, call, tmp_path):
    (tmp_path / "victim.txt").write_text("keep me")
    (workspace / "link").symlink_to(tmp_path / "victim.txt")
    os.mkfifo(workspace / "pipe")
    link = await call(edit, {"path": "link", "old_string": "keep", "new_string": "lose"})
    assert link.is_error and "'link' is a symbolic link" in link.content
    pipe = await call(edit, {"path": "pipe", "old_string": "x", "new_string": "y"})
    assert pipe.is_error and "a FIFO" in pipe.content
    assert (tmp_path / "victim.txt").read_text() == "keep me"
