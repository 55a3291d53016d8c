"""Over the real socket: "allow this tool for this conversation" (never for an always-ask
tool), a stopped call recorded as stopped, and edits/regenerations that keep the old run
but leave it out of the next prompt."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from chat_app.approvals import ALLOWED_REASON, tool_always_asks
from chat_app.consumers import CLOSE_NOT_FOUND
from chat_app.models import Conversation, Run, ToolCallRecord
from chat_app.selectors import conversation_history
from chat_app.services import conversation_create
from chat_app.turns import control_group
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def _approve_once(socket, text: str, *, remember: bool) -> list[dict]:
    await socket.send_json_to({"type": "user_message", "text": text})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    await socket.send_json_to(
        {"type": "approve", "call_id": asked["call_id"], "remember": remember}
    )
    return [asked, *await receive_until(socket, of_type("assistant_message"))]


async def test_an_allowed_tool_runs_without_asking_for_the_rest_of_the_conversation(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    first = await _approve_once(socket, "/guarded text=one", remember=True)
    assert first[0]["may_remember"] is True
    resolved = next(f for f in first if f["type"] == "approval_resolved")
    assert resolved == {**resolved, "approved": True, "reason": ALLOWED_REASON}
    stored = await database_sync_to_async(Conversation.objects.get)(pk=conversation.pk)
    assert stored.allowed_tools == ["guarded"]
    # A later turn: the request is still announced and recorded, but nobody has to click.
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=two"})
    frames = await receive_until(socket, of_type("assistant_message"))
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert (resolved["approved"], resolved["reason"]) == (True, ALLOWED_REASON)
    assert (
        next(f for f in frames if f["type"] == "tool_finished")["preview"] == "guarded ran with two"
    )
    await socket.disconnect()


async def test_a_plain_approval_is_not_remembered(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await _approve_once(socket, "/guarded text=one", remember=False)
    stored = await database_sync_to_async(Conversation.objects.get)(pk=conversation.pk)
    assert stored.allowed_tools == []
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=two"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    await socket.send_json_to({"type": "deny", "call_id": asked["call_id"]})
    await receive_until(socket, of_type("assistant_message"))
    await socket.disconnect()


async def test_an_always_ask_tool_is_never_remembered_or_skipped(
    conversation, alice_cookie, chat_tools, settings
):
    settings.CHAT_ALWAYS_ASK_TOOLS = frozenset({"guarded"})
    # Even a grant already stored (say, before the admin listed the tool) does not count.
    await database_sync_to_async(Conversation.objects.filter(pk=conversation.pk).update)(
        allowed_tools=["guarded"]
    )
    socket, _, _ = await open_socket(conversation, alice_cookie)
    frames = await _approve_once(socket, "/guarded text=one", remember=True)
    assert frames[0]["may_remember"] is False  # the page offers no "allow" button
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert resolved["reason"] != ALLOWED_REASON
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=two"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]  # asked again
    await socket.send_json_to({"type": "deny", "call_id": asked["call_id"]})
    await receive_until(socket, of_type("assistant_message"))
    await socket.disconnect()


async def test_bob_cannot_grant_a_tool_in_alices_conversation(
    conversation, alice_cookie, bob_cookie, chat_tools, bob
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=x"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    # Bob's socket is refused; a control message claiming to be his reaches the turn, ignored.
    intruder, _, _ = await open_socket(conversation, bob_cookie)
    assert await close_code(intruder) == CLOSE_NOT_FOUND
    await get_channel_layer().group_send(
        control_group(conversation.pk),
        {
            "type": "turn.control",
            "action": "approve",
            "user_id": bob.pk,
            "call_id": asked["call_id"],
            "remember": True,
        },
    )
    await socket.send_json_to({"type": "deny", "call_id": asked["call_id"]})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert next(f for f in frames if f["type"] == "approval_resolved")["approved"] is False
    stored = await database_sync_to_async(Conversation.objects.get)(pk=conversation.pk)
    assert stored.allowed_tools == []
    await socket.disconnect()


def test_tools_that_always_ask(chat_tools, settings):
    settings.CHAT_ALWAYS_ASK_TOOLS = frozenset({"echo_twice"})
    assert tool_always_asks("echo_twice")  # listed by the admin
    assert tool_always_asks("no_such_tool")  # nothing to judge it by
    assert not tool_always_asks("guarded")


async def test_a_stopped_call_is_recorded_as_stopped_with_its_running_time(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    await receive_until(socket, of_type("tool_update"))
    await socket.send_json_to({"type": "stop"})
    frames = await receive_until(socket, of_type("assistant_message"))
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["stopped"] is True and finished["duration_ms"] > 0
    record = await database_sync_to_async(ToolCallRecord.objects.get)(call_id=finished["call_id"])
    assert record.status == "stopped" and record.duration_ms > 0
    await socket.disconnect()


async def test_a_regeneration_keeps_the_old_run_but_not_in_the_next_prompt(
    conversation, alice_cookie
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "first question"})
    first = (await receive_until(socket, of_type("assistant_message")))[-1]["run_id"]
    await socket.send_json_to({"type": "user_message", "text": "second question"})
    second = (await receive_until(socket, of_type("assistant_message")))[-1]["run_id"]
    # Edit the first message: both runs stay in history, marked as replaced.
    await socket.send_json_to({"type": "user_message", "text": "edited first", "replaces": first})
    frames = await receive_until(socket, of_type("assistant_message"))
    started = next(f for f in frames if f["type"] == "user_message")
    assert started["replaces"] == first
    runs = await database_sync_to_async(
        lambda: {r.pk: r.superseded for r in Run.objects.filter(conversation=conversation)}
    )()
    assert runs == {first: True, second: True, frames[-1]["run_id"]: False}

    def later_prompt() -> list[str]:
        c = Conversation.objects.get(pk=conversation.pk)
        return [m.content for m in conversation_history(conversation=c, before=c.messages.last())]

    assert (await database_sync_to_async(later_prompt)())[0] == "edited first"
    assert not any("question" in text for text in await database_sync_to_async(later_prompt)())
    await socket.disconnect()


async def test_a_replaced_run_must_be_a_current_run_of_this_conversation(
    conversation, alice_cookie, bob
):
    other = await database_sync_to_async(conversation_create)(owner=bob)
    foreign = await database_sync_to_async(Run.objects.create)(conversation=other, model="offline")
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "x", "replaces": foreign.pk})
    error = (await receive_until(socket, of_type("error")))[-1]
    assert "not a current run" in error["message"]
    await socket.disconnect()
