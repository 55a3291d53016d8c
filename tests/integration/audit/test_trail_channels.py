"""The trail through the real call path in-process: an API token's turn names the token, a
session's API turn says so, and a call a team rule denies names the rule."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from accounts.services import api_token_create
from audit_app.models import AuditEvent
from chat_app.services import conversation_create
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until
from tools_app.policy.models import PolicyRule

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_api_token_turn_names_the_token(alice, client):
    conversation = conversation_create(owner=alice)
    token = api_token_create(user=alice, name="nightly report")
    response = client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "/bash echo hi"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    row = AuditEvent.objects.get()
    assert (row.username, row.tool, row.channel, row.channel_detail) == (
        "alice",
        "bash",
        "api",
        "token 'nightly report'",
    )
    # Nobody attends an API turn: the ask is refused, and the body never ran.
    assert (row.verdict, row.decided_by, row.outcome) == ("refused_unattended", "", "not_run")
    assert row.run_id == response.json()["run_id"]


def test_a_session_api_turn_is_on_the_api_channel_without_a_token(alice_client, alice):
    conversation = conversation_create(owner=alice)
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "/bash echo hi"},
        content_type="application/json",
    )
    assert response.status_code == 200
    row = AuditEvent.objects.get()
    assert (row.channel, row.channel_detail) == ("api", "session")


@pytest.mark.usefixtures("asgi_application", "no_leftover_turns")
async def test_a_call_denied_by_a_rule_names_the_rule_and_a_chat_call_is_on_chat(
    alice, alice_cookie, chat_tools
):
    conversation = await database_sync_to_async(conversation_create)(owner=alice)
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
    await receive_until(socket, of_type("assistant_message"))
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    await receive_until(socket, of_type("assistant_message"))
    await socket.disconnect()
    denied, echoed = await database_sync_to_async(list)(AuditEvent.objects.order_by("id"))
    assert (denied.tool, denied.verdict, denied.outcome) == ("guarded", "deny", "not_run")
    assert f"rule #{rule.pk}" in denied.rule and "no secrets" in denied.rule
    assert (echoed.tool, echoed.verdict, echoed.outcome, echoed.channel) == (
        "echo_twice",
        "allow",
        "ok",
        "chat",
    )
