"""A socket lives only as long as its login (accounts/session_revocation.py), over a real socket.

Each trigger (logout, a deleted or flushed session, deactivation, a password change) closes
the user's sockets whose session it ended with 4401; a socket whose session still stands
stays open; a session changing its own password keeps its socket; and a socket that missed
the message is still refused at its next approval or turn start.
"""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client

from chat_app import consumers
from chat_app.consumers import CLOSE_UNAUTHENTICATED
from tests.conftest import PASSWORD
from tests.integration.chat_app.conftest import (
    close_code,
    of_type,
    open_socket,
    receive_until,
    session_cookie,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


def _client(cookie: str) -> Client:
    client = Client()
    client.cookies["sessionid"] = cookie
    return client


async def _other_session(user) -> str:
    return await database_sync_to_async(session_cookie)(user)


async def _still_open(socket) -> bool:
    return await socket.receive_nothing(timeout=0.5)


async def _turn_completes(socket) -> None:
    await socket.send_json_to({"type": "user_message", "text": "hi", "model": "offline"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert frames[-1]["status"] == "completed"


async def test_logout_in_another_tab_closes_that_sessions_socket(conversation, alice, alice_cookie):
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    other, other_connected, _ = await open_socket(conversation, await _other_session(alice))
    assert connected and other_connected
    response = await database_sync_to_async(_client(alice_cookie).post)("/logout/")
    assert response.status_code in (200, 302)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED
    # Alice's other login is untouched: its socket stays and still runs a turn.
    assert await _still_open(other)
    await _turn_completes(other)
    await other.disconnect()


async def test_deactivation_closes_every_socket_of_the_user(conversation, alice, alice_cookie):
    first, _, _ = await open_socket(conversation, alice_cookie)
    second, _, _ = await open_socket(conversation, await _other_session(alice))
    alice.is_active = False
    await database_sync_to_async(alice.save)()
    assert await close_code(first) == CLOSE_UNAUTHENTICATED
    assert await close_code(second) == CLOSE_UNAUTHENTICATED


async def test_a_password_set_by_an_admin_closes_the_socket(conversation, alice, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    alice.set_password("chosen by the admin")
    await database_sync_to_async(alice.save)()
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_an_unrelated_save_of_the_user_leaves_the_socket_open(
    conversation, alice, alice_cookie
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    alice.first_name = "Alice"
    await database_sync_to_async(alice.save)()
    assert await _still_open(socket)
    await _turn_completes(socket)
    await socket.disconnect()


async def test_a_deleted_session_row_closes_its_socket(conversation, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await Session.objects.filter(session_key=alice_cookie).adelete()
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_flushed_session_closes_its_socket(conversation, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await database_sync_to_async(SessionStore(alice_cookie).flush)()
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_changing_ones_own_password_keeps_this_sessions_socket(
    conversation, alice, alice_cookie
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    other, _, _ = await open_socket(conversation, await _other_session(alice))
    client = _client(alice_cookie)
    response = await database_sync_to_async(client.post)(
        "/account/",
        {
            "action": "password",
            "old_password": PASSWORD,
            "new_password1": "a brand new passphrase 42",
            "new_password2": "a brand new passphrase 42",
        },
    )
    assert response.status_code == 302, response.content[:500]
    assert client.cookies["sessionid"].value != alice_cookie, "the key was cycled"
    # The other login used the old password: its socket closes; this one stays and acts.
    assert await close_code(other) == CLOSE_UNAUTHENTICATED
    assert await _still_open(socket)
    await _turn_completes(socket)
    await socket.send_json_to({"type": "approve", "call_id": "none-pending"})
    assert await _still_open(socket), "an approval re-checks the adopted key and passes"
    await socket.disconnect()


def _delete_without_signals(session_key: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_session WHERE session_key = %s", [session_key])


async def test_a_missed_message_still_refuses_the_next_approval(conversation, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await database_sync_to_async(_delete_without_signals)(alice_cookie)
    assert await _still_open(socket), "no message was sent"
    await socket.send_json_to({"type": "approve", "call_id": "anything"})
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_missed_message_refuses_a_turn_start_once_the_check_is_stale(
    conversation, alice_cookie, monkeypatch
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await database_sync_to_async(_delete_without_signals)(alice_cookie)
    monkeypatch.setattr(consumers, "SESSION_RECHECK_SECONDS", 0.0)
    await socket.send_json_to({"type": "user_message", "text": "hi", "model": "offline"})
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_revoked_token_stops_the_api_turn_it_started(
    conversation, alice, alice_cookie, chat_tools
):
    from django.test import AsyncClient

    from accounts.models import ApiToken
    from accounts.services import api_token_create

    token = await database_sync_to_async(api_token_create)(user=alice, name="script")
    watcher, _, _ = await open_socket(conversation, alice_cookie)  # sees the turn's events
    request = asyncio.ensure_future(
        AsyncClient().post(
            f"/api/conversations/{conversation.public_id}/turns",
            {"text": "/ticker seconds=60"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {token}"},
        )
    )
    await receive_until(watcher, of_type("tool_update"))
    revoked = asyncio.get_running_loop().time()
    await ApiToken.objects.filter(user=alice).adelete()
    response = await asyncio.wait_for(request, 30)
    assert asyncio.get_running_loop().time() - revoked < 10, "stopped, not run for 60 s"
    assert response.status_code == 200 and response.json()["status"] == "stopped"
    await watcher.disconnect()
