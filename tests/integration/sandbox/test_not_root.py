"""Not root: a sandboxed command is an unprivileged user on the host, checked from the host.

When the server runs as root (as here and in CI), the process switches to the sandbox user
before bwrap starts; its /proc/<pid>/status, read from outside, must say so (inside, the
user namespace would show the mapped ids whatever the host sees). The workspace is handed
over to that user before each call, so what the server's file tools and uploads made as root
stays usable, and what the command makes stays usable to the server.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import ApprovalDecision
from openprogram.programs.builtin.bash import bash
from openprogram.programs.builtin.edit import edit
from openprogram.security.sandbox import sandbox_problem
from tests.processes import live_processes_with

pytestmark = [
    pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the switch happens only for a root server"),
]

SANDBOX_UID = SANDBOX_GID = 65534


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    previous = config.get_config()
    config.configure(home=tmp_path / "home")
    sandbox_problem.cache_clear()

    async def approve(_request):
        return ApprovalDecision(approved=True)

    workspace = tmp_path / "home" / "workspaces" / "alice"
    workspace.mkdir(parents=True, mode=0o700)
    token = current_turn.set(
        TurnContext(
            user_id="alice", conversation_id="c", workspace=workspace, approval_hook=approve
        )
    )
    yield workspace
    current_turn.reset(token)
    config._config = previous
    sandbox_problem.cache_clear()


async def _run(command: str):
    result = await bash._agent_tool.execute("c1", {"command": command})
    assert not result.is_error, result.content
    return result


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {name: value.strip() for name, _, value in (line.partition(":") for line in lines)}


async def test_the_command_is_the_sandbox_user_on_the_host_with_no_groups(workspace):
    marker = f"7.{uuid.uuid4().int % 10**9:09d}"
    call = asyncio.ensure_future(_run(f"sleep {marker}"))
    deadline = time.monotonic() + 30
    while not (pids := live_processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert pids, "the command never ran"
    status = _status(next(iter(pids)))
    call.cancel()
    assert status["Uid"].split() == [str(SANDBOX_UID)] * 4  # real, effective, saved, fs
    assert status["Gid"].split() == [str(SANDBOX_GID)] * 4
    assert status["Groups"] == ""
    assert status["CapEff"] == "0000000000000000"
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_the_command_cannot_make_user_namespaces_of_its_own(workspace):
    result = await _run("unshare --user --map-root-user id -u; echo rc=$?")
    assert "rc=0" not in result.content and "unshare failed" in result.content


async def test_what_root_made_in_the_workspace_is_usable_and_what_the_command_made_is_too(
    workspace,
):
    uploads = workspace / "uploads"
    uploads.mkdir(mode=0o700)
    upload = uploads / "data.csv"
    upload.write_text("a,b\n")
    upload.chmod(0o600)  # as the chat's attachments are written

    result = await _run("cat uploads/data.csv; echo 1,2 >> uploads/data.csv; echo made > mine.txt")
    assert "a,b" in result.content
    assert upload.read_text() == "a,b\n1,2\n"
    mine = workspace / "mine.txt"
    assert (mine.stat().st_uid, mine.stat().st_gid) == (SANDBOX_UID, SANDBOX_GID)

    edited = await edit._agent_tool.execute(
        "c2", {"path": "mine.txt", "old_string": "made", "new_string": "edited by the server"}
    )
    assert not edited.is_error, edited.content
    again = await _run("cat mine.txt; echo more >> mine.txt")
    assert "edited by the server" in again.content
    assert mine.read_text() == "edited by the server\nmore\n"


async def test_the_data_directory_above_the_workspace_stays_closed_to_the_sandbox_user(workspace):
    home = workspace.parent.parent
    (home / "secret_key").write_text("s3cr3t")
    (home / "secret_key").chmod(0o600)
    await _run("true")
    assert (home / "secret_key").stat().st_uid == 0  # only the workspace was handed over
    assert (workspace.parent.stat().st_uid, home.stat().st_uid) == (0, 0)
