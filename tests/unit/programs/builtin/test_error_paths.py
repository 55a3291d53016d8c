"""Tool errors reach the model and the chat with workspace-relative paths, never the server's."""

from __future__ import annotations

from pathlib import Path

from openprogram import config, function
from openprogram.programs.builtin.read import read
from openprogram.security.redact import redact_server_paths


async def test_an_os_error_inside_the_workspace_is_shown_relative_to_it(turn, workspace):
    @function
    def touchy(name: str) -> str:
        """Fail the way open() fails on an unreadable file.

        Args:
            name: a file name
        """
        raise PermissionError(13, "Permission denied", str(workspace / "notes" / name))

    result = await touchy._agent_tool.execute("c1", {"name": "a.md"})
    assert result.is_error
    assert result.content == "PermissionError: [Errno 13] Permission denied: 'notes/a.md'"


async def test_a_path_outside_the_workspace_is_refused_without_naming_the_root(
    turn, call, workspace
):
    result = await call(read, {"path": "../../etc/passwd"})
    assert result.is_error and "'..' is not accepted" in result.content
    assert str(workspace) not in result.content and str(workspace.parent) not in result.content


def test_server_directories_become_placeholders(turn, workspace, tmp_path):
    home = config.get_config().home
    text = (
        f"{workspace}/a.txt; {workspace}; {workspace}-evil/b; {home}/secret_key; "
        f"{home}/workspaces/bob/x; {Path(__file__).resolve()}"
    )
    assert redact_server_paths(text) == (
        f"a.txt; .; {workspace}-evil/b; <data>/secret_key; <workspaces>/bob/x; "
        "<server>/tests/unit/programs/builtin/test_error_paths.py"
    )
