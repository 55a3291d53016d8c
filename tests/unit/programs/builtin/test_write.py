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


async def test_it_refuses_a_symlinked_target_and_writes_nothing_through_it(
    turn, workspace, call, tmp_path
):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (workspace / "link.txt").symlink_to(victim)
    result = await call(write, {"path": "link.txt", "content": "pwned"})
    assert result.is_error and "'link.txt' is a symbolic link" in result.content
    assert victim.read_text() == "keep me" and (workspace / "link.txt").is_symlink()


async def test_it_refuses_a_hard_linked_target(turn, workspace, call, tmp_path):
    other = tmp_path / "other-name.txt"
    other.write_text("shared")
    os.link(other, workspace / "hard.txt")
    result = await call(write, {"path": "hard.txt", "content": "pwned"})
    assert result.is_error and "2 hard links" in result.content
    assert other.read_text() == "shared"


async def test_overwriting_keeps_the_files_mode_and_leaves_no_temporary_file(turn, workspace, call):
    (workspace / "run.sh").write_text("echo old\n")
    (workspace / "run.sh").chmod(0o750)
    result = await call(write, {"path": "run.sh", "content": "echo new\n"})
    assert not result.is_error
    assert (workspace / "run.sh").stat().st_mode & 0o777 == 0o750
    assert [p.name for p in workspace.iterdir()] == ["run.sh"]
