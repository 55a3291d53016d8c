"""Over the real socket: the team policy in a chat — a denied call names its rule and never
asks, "Always allow" from the card saves a rule the next turn honours, and an admin's
ask the user may not relax offers neither "always allow" nor "allow for this chat"."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from tests.integration.chat_app.conftest import of_type, open_socket, receive_until
from tools_app.policy.models import PolicyRule

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def test_a_denied_call_names_the_rule_and_is_never_asked(
    conversation, alice_cookie, chat_tools
):
    rule = await database_sync_to_async(PolicyRule.objects.create)(
        scope="org",
        tool="guarded",
        verdict="deny",
        condition_kind="pointer",
        condition_pointer="/text",
        condition_value='"secret"',
        reason="no secrets",
    )
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=secret"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert not [f for f in frames if f["type"] == "approval_requested"]
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["is_error"] and f"rule #{rule.pk}" in finished["preview"]
    assert "no secrets" in finished["preview"]
    await socket.disconnect()


async def test_always_allow_from_the_card_saves_a_rule_the_next_turn_honours(
    conversation, alice_cookie, chat_tools, alice
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=one"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    assert asked["user_may_allow"] is True and asked["suggestion"] == "guarded"
    await socket.send_json_to(
        {"type": "approve", "call_id": asked["call_id"], "always_allow": asked["suggestion"]}
    )
    await receive_until(socket, of_type("assistant_message"))
    saved = await database_sync_to_async(
        lambda: list(PolicyRule.objects.values_list("scope", "user_id", "tool", "verdict"))
    )()
    assert saved == [("user", alice.pk, "guarded", "allow")]
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=two"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert not [f for f in frames if f["type"] == "approval_requested"]
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["preview"] == "guarded ran with two"
    await socket.disconnect()


async def test_an_admins_ask_offers_no_user_relaxing_and_saves_nothing(
    conversation, alice_cookie, chat_tools
):
    await database_sync_to_async(PolicyRule.objects.create)(
        scope="org", tool="echo_twice", verdict="ask", reason="reviewed"
    )
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=x"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    assert asked["user_may_allow"] is False and asked["may_remember"] is False
    assert asked["suggestion"] == "" and "reviewed" in asked["rule"]
    # A hand-made frame asking for both anyway: the call is approved, nothing is kept.
    await socket.send_json_to(
        {
            "type": "approve",
            "call_id": asked["call_id"],
            "always_allow": "echo_twice",
            "remember": True,
        }
    )
    await receive_until(socket, of_type("assistant_message"))
    assert await database_sync_to_async(PolicyRule.objects.filter(scope="user").count)() == 0
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=y"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]  # asked again
    await socket.send_json_to({"type": "deny", "call_id": asked["call_id"]})
    await receive_until(socket, of_type("assistant_message"))
    await socket.disconnect()
