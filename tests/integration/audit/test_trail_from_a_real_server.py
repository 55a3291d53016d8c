"""Over a real daphne and two real WebSockets: alice's turn runs in one tab and she
approves its `bash` from a second tab; the trail names her as the approver, and the row
stays after she deletes the chat."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect

from openprogram.security.sandbox import sandbox_problem
from tests.integration.sandbox.chat_socket import ChatSession, chat_session
from tests.servers import DaphneServer, make_server
from tests.signed_in import sign_in

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    server = make_server(tmp_path_factory.mktemp("audit") / "home")
    server.create_users()
    server.start()
    yield server
    server.stop()


async def _frame_of(ws, kind: str, seen: list[dict]) -> dict:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        seen.append(frame)
        if frame["type"] == kind:
            return frame


async def _approve_from_a_second_tab(session: ChatSession, command: str) -> list[dict]:
    headers = {"Cookie": session.cookie}
    async with (
        connect(session.url, origin=session.origin, additional_headers=headers) as first,
        connect(session.url, origin=session.origin, additional_headers=headers) as second,
    ):
        first_frames: list[dict] = []
        second_frames: list[dict] = []
        await first.send(json.dumps({"type": "user_message", "text": "/bash " + command}))
        asked = await _frame_of(second, "approval_requested", second_frames)
        await second.send(json.dumps({"type": "approve", "call_id": asked["call_id"]}))
        await _frame_of(first, "turn_finished", first_frames)
        return first_frames


_TRAIL_FIELDS = (
    "username",
    "tool",
    "verdict",
    "decided_by",
    "outcome",
    "channel",
    "conversation_id",
    "arguments",
)


def _trail(server: DaphneServer) -> list[dict]:
    """The server's audit rows, read from its SQLite file (``arguments`` is JSON text)."""
    rows = server.sql(f"SELECT {', '.join(_TRAIL_FIELDS)} FROM audit_app_auditevent ORDER BY id")
    return [
        {**dict(zip(_TRAIL_FIELDS, row, strict=True)), "arguments": json.loads(row[-1])}
        for row in rows
    ]


def _wait_for_the_run_to_end(server: DaphneServer) -> None:
    """``turn_finished`` reaches the tabs before the run's row says it ended; a chat with a
    running turn cannot be deleted."""
    deadline = time.monotonic() + 30
    while server.sql("SELECT id FROM chat_app_run WHERE status = 'running'"):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)


def test_an_approval_from_a_second_tab_names_the_approver_and_outlives_the_chat(server):
    person = sign_in(server, "alice")
    conversation = person.conversation()
    alice = chat_session(person, conversation)
    frames = asyncio.run(_approve_from_a_second_tab(alice, json.dumps({"command": "echo hi"})))
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert not finished["is_error"], finished
    (row,) = _trail(server)
    assert row == {
        **row,
        "username": "alice",
        "tool": "bash",
        "verdict": "approved",
        "decided_by": "alice",
        "outcome": "ok",
        "channel": "chat",
        "arguments": {"command": "echo hi"},
    }
    _wait_for_the_run_to_end(server)
    person.delete_conversation(conversation)
    assert not server.sql("SELECT id FROM chat_app_conversation")
    assert _trail(server) == [row]
