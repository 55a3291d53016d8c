"""bash in the bubblewrap sandbox, for real: what an approved command can and cannot reach."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import ApprovalDecision
from openprogram.programs._availability import clear_availability_cache
from openprogram.programs.builtin.bash import bash
from openprogram.programs.policy import resolve_tools
from openprogram.security.sandbox import sandbox_problem

pytestmark = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}"
)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A data directory laid out as the server's: secret key, database, two workspaces."""
    data = tmp_path / "home"
    for user in ("alice", "bob"):
        (data / "workspaces" / user).mkdir(parents=True)
    (data / "secret_key").write_text("s3cr3t-key")
    (data / "db.sqlite3").write_text("all the users' conversations")
    (data / "workspaces" / "bob" / "diary.txt").write_text("bob's private diary")
    (data / "results").mkdir()
    previous = config.get_config()
    config.configure(home=data, workspaces_dir=data / "workspaces")
    sandbox_problem.cache_clear()
    clear_availability_cache()
    yield data
    config._config = previous
    sandbox_problem.cache_clear()
    clear_availability_cache()


@pytest.fixture
def as_alice(home: Path) -> Iterator[Path]:
    async def approve(_request):
        return ApprovalDecision(approved=True)

    workspace = home / "workspaces" / "alice"
    token = current_turn.set(
        TurnContext(
            user_id="alice", conversation_id="c", workspace=workspace, approval_hook=approve
        )
    )
    yield workspace
    current_turn.reset(token)


async def _run(command: str) -> str:
    result = await bash._agent_tool.execute("c1", {"command": command})
    assert not result.is_error, result.content
    return result.content


async def test_the_workspace_is_the_only_user_data_visible_and_writable(home, as_alice):
    output = await _run(
        f"cat {home}/workspaces/bob/diary.txt; cat {home}/secret_key; cat {home}/db.sqlite3;"
        f" ls {home}; echo mine > note.txt; echo outside > {home}/escaped.txt; "
        "touch /usr/evil; echo x > /escaped; mkdir /etc/evil; ls /root /home /work; echo end"
    )
    for secret in ("bob's private diary", "s3cr3t-key", "all the users' conversations"):
        assert secret not in output
    assert (as_alice / "note.txt").read_text() == "mine\n"
    assert not (home / "escaped.txt").exists()
    assert not Path("/usr/evil").exists()
    assert "No such file or directory" in output and "end" in output
    assert output.count("Read-only file system") >= 3  # /usr, the sandbox's root, /etc


async def test_tmp_is_private_to_each_call(as_alice, tmp_path):
    await _run("echo left-behind > /tmp/scratch && cat /tmp/scratch")
    second = await _run("ls -A /tmp; echo listed")
    assert "scratch" not in second
    assert not Path("/tmp/scratch").exists()


@pytest.fixture
def loopback_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


async def test_there_is_no_network_unless_the_deployment_allows_it(home, as_alice, loopback_server):
    probe = f"(exec 3<>/dev/tcp/127.0.0.1/{loopback_server}) 2>/dev/null && echo REACHED || echo BLOCKED"
    assert "BLOCKED" in await _run(probe)
    config.configure(home=home, workspaces_dir=home / "workspaces", sandbox_network=True)
    assert "REACHED" in await _run(probe)


def test_without_bubblewrap_bash_is_not_offered_and_explain_says_why(home):
    config.configure(home=home, workspaces_dir=home / "workspaces", bwrap="no-such-bwrap")
    clear_availability_cache()
    resolution = resolve_tools(only_available=True)
    assert "bash" not in [tool.name for tool in resolution.tools]
    (row,) = [row for row in resolution.explain() if row["name"] == "bash"]
    assert "bubblewrap" in row["reason"] and row["layer"] == "L4"


async def test_without_bubblewrap_a_direct_call_refuses_to_run_unconfined(home, as_alice):
    config.configure(home=home, workspaces_dir=home / "workspaces", bwrap="no-such-bwrap")
    result = await bash._agent_tool.execute("c1", {"command": "touch ran.txt"})
    assert result.is_error and "bubblewrap" in result.content
    assert not (as_alice / "ran.txt").exists()


def test_a_staff_only_shell_is_hidden_from_other_users(home):
    config.configure(home=home, workspaces_dir=home / "workspaces", shell_staff_only=True)
    clear_availability_cache()
    for is_staff, offered in ((False, False), (True, True)):
        resolution = resolve_tools(
            only_available=True, can_use_context={"user_id": 1, "is_staff": is_staff}
        )
        assert ("bash" in [tool.name for tool in resolution.tools]) is offered
    (row,) = [
        row
        for row in resolve_tools(only_available=True, can_use_context={"is_staff": False}).explain()
        if row["name"] == "bash"
    ]
    assert "limited to staff" in row["reason"]


async def test_a_shell_call_that_fills_the_workspace_is_measured_and_writes_wait(as_alice):
    from openprogram.programs.builtin.write import write

    config.configure(
        home=config.get_config().home,
        workspaces_dir=config.get_config().workspaces_dir,
        workspace_quota_bytes=64 * 1024,
    )
    filled = await _run("head -c 100000 /dev/urandom > big.bin; echo done")
    assert "done" in filled and "over its quota" in filled
    refused = await write._agent_tool.execute("w1", {"path": "a.txt", "content": "x"})
    assert refused.is_error and "the workspace is full" in refused.content
    freed = await _run("rm big.bin; echo freed")
    assert "freed" in freed and "over its quota" not in freed
    allowed = await write._agent_tool.execute("w2", {"path": "a.txt", "content": "x"})
    assert not allowed.is_error, allowed.content
