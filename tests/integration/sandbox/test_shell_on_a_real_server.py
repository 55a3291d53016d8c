"""The shell sandbox through a real daphne and a real socket, as alice, bob and an admin.

alice approves her own `bash` in the chat; what it can reach is read from the tool's
streamed output and from the disk. The settings that hide `bash` are checked in the
offered list and the explain trace the socket relays.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.security.sandbox import sandbox_problem
from tests.integration.sandbox.chat_socket import chat_sessions, turn_frames
from tests.servers import DaphneServer, make_server

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    server = make_server(tmp_path_factory.mktemp("sandbox") / "home")
    server.create_users()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def loopback_port() -> Iterator[int]:
    """An HTTP server on the host's loopback that answers anyone who reaches it."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _bash(session, command: str) -> tuple[str, dict[str, Any]]:
    """Run an approved `bash` in the chat: its streamed output and its tool_finished frame."""
    text = "/bash " + json.dumps({"command": command})
    frames = asyncio.run(turn_frames(session, text))
    (finished,) = [f for f in frames if f["type"] == "tool_finished"]
    output = "".join(f.get("text", "") for f in frames if f["type"] == "tool_update")
    return output, finished


def _offered(frames: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    (resolved,) = [f for f in frames if f["type"] == "tools_resolved"]
    return resolved["tools"] + resolved["deferred"], resolved["explain"]["not_offered"]


def test_alices_approved_bash_sees_only_her_workspace_and_no_network(server, loopback_port):
    sessions = chat_sessions(server, "alice", "bob")
    alice, bob = sessions["alice"], sessions["bob"]
    Path(bob.workspace).mkdir(parents=True, exist_ok=True)
    (Path(bob.workspace) / "diary.txt").write_text("bob's private diary")
    secret_key = (server.home / "secret_key").read_text()
    database = server.home / "db.sqlite3"
    assert database.read_bytes().startswith(b"SQLite format 3")

    output, finished = _bash(
        alice,
        f"cat {bob.workspace}/diary.txt; cat {server.home}/secret_key; "
        f"head -c 64 {database}; ls {server.home}; "
        f"(exec 3<>/dev/tcp/127.0.0.1/{loopback_port}) 2>/dev/null && echo NET=REACHED "
        "|| echo NET=BLOCKED; "
        f"echo mine > note.txt; echo escaped > {server.home}/escaped.txt; echo x > /escaped; "
        "echo private > /tmp/scratch; pwd; echo END",
    )

    assert not finished["is_error"], finished
    assert "END" in output and alice.workspace in output  # pwd: the real path
    for leaked in ("bob's private diary", secret_key, "SQLite format 3"):
        assert leaked not in output
    assert "NET=BLOCKED" in output and "NET=REACHED" not in output
    assert (Path(alice.workspace) / "note.txt").read_text() == "mine\n"
    assert not (server.home / "escaped.txt").exists()
    assert "Read-only file system" in output
    assert not Path("/tmp/scratch").exists()


def test_bob_cannot_reach_what_alices_shell_wrote(server):
    sessions = chat_sessions(server, "alice", "bob")
    alice, bob = sessions["alice"], sessions["bob"]
    _bash(alice, "echo alice-only > mine.txt")
    assert (Path(alice.workspace) / "mine.txt").exists()

    output, _ = _bash(bob, f"cat {alice.workspace}/mine.txt; ls {Path(alice.workspace).parent}")
    assert "alice-only" not in output and "No such file or directory" in output


def test_a_staff_only_shell_is_offered_to_the_admin_and_explained_to_alice(tmp_path):
    server = make_server(tmp_path / "home", OPENPROGRAM_SHELL_STAFF_ONLY="1")
    server.create_users()
    server.start()
    try:
        sessions = chat_sessions(server, "alice", "root")
        frames = asyncio.run(turn_frames(sessions["alice"], "/bash echo hi"))
        offered, not_offered = _offered(frames)
        assert "bash" not in offered
        assert not [f for f in frames if f["type"] == "approval_requested"]
        assert any("staff" in g["reason"] and "bash" in g["names"] for g in not_offered)

        output, finished = _bash(sessions["root"], "echo staff-ran")
        assert "staff-ran" in output and not finished["is_error"]
    finally:
        server.stop()


def test_without_a_working_bubblewrap_bash_is_not_offered_and_the_reason_is_shown(tmp_path):
    server = make_server(tmp_path / "home", OPENPROGRAM_BWRAP="/nonexistent/bwrap")
    server.create_users()
    server.start()
    try:
        alice = chat_sessions(server, "alice")["alice"]
        frames = asyncio.run(turn_frames(alice, "/bash touch ran.txt"))
        offered, not_offered = _offered(frames)
        assert "bash" not in offered
        assert any("bubblewrap" in g["reason"] and "bash" in g["names"] for g in not_offered)
        assert not [f for f in frames if f["type"] == "approval_requested"]
        assert not (Path(alice.workspace) / "ran.txt").exists()
    finally:
        server.stop()
