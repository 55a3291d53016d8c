"""An MCP server in the chat: its question's frames and the owner's answer, unattended turns,
progress as tool_update frames and Stop reaching the server as a cancellation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from channels.layers import get_channel_layer

from chat_app.turns import control_group
from openprogram.mcp import Backoff, MCPManager
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until
from tests.integration.mcp.conftest import LEGACY, MODERN, WAIT, is_ready, protocol_config

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


@pytest.fixture(params=[MODERN, LEGACY])
def proto_tools(request, clean_registry, tmp_path) -> Iterator[MCPManager]:
    """The protocol server's tools offered directly (always loaded) for the turn, once for
    a server of each protocol revision (2026-07-28 input rounds, 2025-11-25 requests)."""
    manager = MCPManager(backoff=Backoff(0.05, 0.4))
    manager.marker_dir = tmp_path  # type: ignore[attr-defined]
    try:
        env = {"PROTOCOL_MARKER_DIR": str(tmp_path), "PROTOCOL_REVISION": request.param}
        # Unconfined: it leaves markers in a host folder the test reads (confinement is
        # tests/integration/mcp/test_stdio_confinement.py's subject).
        manager.add(protocol_config(always_load=True, env=env, confined=False))
        manager.wait_for("proto", is_ready, timeout=WAIT)
        assert manager.status("proto")["protocol_version"] == request.param
        yield manager
    finally:
        manager.shutdown()


async def _result(socket) -> dict:
    frames = await receive_until(socket, of_type("assistant_message"))
    return next(f for f in frames if f["type"] == "tool_finished")


async def test_alice_fills_the_servers_form_and_the_defaults_go_back_too(
    conversation, alice_cookie, proto_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/mcp__proto__ask_profile"})
    frames = await receive_until(socket, of_type("elicitation_requested"))
    started = next(f for f in frames if f["type"] == "tool_call_started")
    asked = frames[-1]
    assert asked["tool_call_id"] == started["call_id"]
    assert (asked["mode"], asked["source"]) == ("form", "proto")
    assert asked["message"] == "Please fill in your profile"
    fields = {f["name"]: f for f in asked["fields"]}
    assert fields["name"]["default"] == "Alice" and fields["email"]["required"] is True
    await socket.send_json_to(
        {
            "type": "elicit",
            "call_id": asked["call_id"],
            "action": "accept",
            "content": {"email": "alice@example.com", "age": 41},
        }
    )
    finished = await _result(socket)
    answer = json.loads(finished["preview"])
    assert answer["action"] == "accept"
    assert answer["content"] == {
        "name": "Alice",
        "age": 41,
        "score": 95.5,
        "subscribe": True,
        "color": "green",
        "email": "alice@example.com",
    }
    await socket.disconnect()


async def test_only_the_owner_can_answer_the_form(conversation, alice_cookie, proto_tools, bob):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/mcp__proto__ask_profile"})
    asked = (await receive_until(socket, of_type("elicitation_requested")))[-1]
    # A control message claiming to come from bob reaches the turn's group, and is ignored.
    await get_channel_layer().group_send(
        control_group(conversation.pk),
        {
            "type": "turn.control",
            "action": "elicit",
            "user_id": bob.pk,
            "call_id": asked["call_id"],
            "choice": "accept",
            "content": {"email": "bob@example.com"},
        },
    )
    await socket.send_json_to({"type": "elicit", "call_id": asked["call_id"], "action": "decline"})
    finished = await _result(socket)
    assert json.loads(finished["preview"]) == {"action": "decline", "content": None}
    await socket.disconnect()


async def test_an_unattended_turn_declines_the_form_without_waiting(
    conversation, alice_cookie, proto_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to(
        {"type": "user_message", "text": "/mcp__proto__ask_profile", "attended": False}
    )
    frames = await receive_until(socket, of_type("assistant_message"))
    resolved = next(f for f in frames if f["type"] == "elicitation_resolved")
    assert resolved["action"] == "decline" and "nobody is attending" in resolved["reason"]
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert json.loads(finished["preview"])["action"] == "decline"
    await socket.disconnect()


async def test_a_malformed_answer_frame_gets_an_error_and_the_form_stays_open(
    conversation, alice_cookie, proto_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/mcp__proto__ask_profile"})
    asked = (await receive_until(socket, of_type("elicitation_requested")))[-1]
    await socket.send_json_to({"type": "elicit", "call_id": asked["call_id"], "action": "maybe"})
    error = (await receive_until(socket, of_type("error")))[-1]
    assert error["kind"] == "bad_frame" and "'elicit' frame rejected" in error["message"]
    await socket.send_json_to({"type": "elicit", "call_id": asked["call_id"], "action": "cancel"})
    finished = await _result(socket)
    assert json.loads(finished["preview"])["action"] == "cancel"
    await socket.disconnect()


async def test_stopping_the_turn_cancels_an_open_form(conversation, alice_cookie, proto_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/mcp__proto__ask_profile"})
    await receive_until(socket, of_type("elicitation_requested"))
    await socket.send_json_to({"type": "stop"})
    frames = await receive_until(socket, of_type("assistant_message"))
    resolved = next(f for f in frames if f["type"] == "elicitation_resolved")
    assert resolved["action"] == "cancel" and resolved["reason"] == "the turn was stopped"
    assert frames[-1]["status"] == "stopped"
    await socket.disconnect()


async def test_progress_arrives_as_tool_update_frames_and_stop_cancels_on_the_server(
    conversation, alice_cookie, proto_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to(
        {"type": "user_message", "text": "/mcp__proto__wait_for_cancel seconds=60"}
    )
    update = (await receive_until(socket, of_type("tool_update")))[-1]
    assert update["text"].strip() == "waiting"
    await socket.send_json_to({"type": "stop"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert frames[-1]["status"] == "stopped"
    marker = proto_tools.marker_dir / "cancelled"
    deadline = asyncio.get_running_loop().time() + WAIT
    while not marker.exists():
        assert asyncio.get_running_loop().time() < deadline, "the server never saw the cancel"
        await asyncio.sleep(0.05)
    await socket.disconnect()
