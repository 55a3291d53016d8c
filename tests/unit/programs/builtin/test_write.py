"""write: creates files and parent directories inside the workspace, nowhere else."""

from __future__ import annotations

import os

from openprogram.programs.builtin.write import write


async def test_it_creates_a_file_and_its_parent_directories(turn, workspace, call):
    result = await call(write, {"path": "src/pkg/mod.py", "content": "x = 1\n"})
    assert not result.is_error
    assert (workspace / "src/pkg/mod.py").read_text() == "x = 1\n"
    assert "Created src/pkg/mod.py" in result.content and result.details["created"] is True


async def test_it_overwrites_an_existing_file_whole(turn, workspace, call):
    (workspace / "a.txt").write_text("old content that is longer")
    result = await call(write, {"path": "a.txt", "content": "new"})
    assert "Overwrote a.txt" in result.content
    assert (workspace / "a.txt").read_text() == "new"


async def test_it_refuses_to_write_outside_the_workspace(turn, workspace, call, tmp_path):
    outside = tmp_path / "outside.txt"
    for path in ("../outside.txt", str(outside), "~/outside.txt"):
        result = await call(write, {"path": path, "content": "pwned"})
        assert result.is_error and "refused" in result.content
    assert not outside.exists()


async def test_it_refuses_to_write_through_a_symlink_leading_out(turn, workspace, call, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / "link").symlink_to(elsewhere)
    result = await call(write, {"path": "link/planted.txt", "content": "pwned"})
    assert result.is_error
    assert list(elsewhere.iterdir()) == []


async def test_it_refuses_a_directory_target_and_bad_arguments(turn, workspace, call):
    (workspace / "d").mkdir()
    assert (await call(write, {"path": "d", "content": "x"})).is_error
    assert (await call(write, {"path": ".", "content": "x"})).is_error
    missing = await call(write, {"path": "a.txt"})
    assert missing.is_error and "'content'" in missing.content


def test_it_is_hidden_in_plan_mode():
    assert "plan" in write._agent_tool.unsafe_in


async def test_a_fifo_is_refused_instead_of_blocking_forever(turn, workspace, call):
    os.mkfifo(workspace / "pipe")
    result = await call(write, {"path": "pipe", "content": "x"})
    assert result.is_error and "not a regular file" in result.content
