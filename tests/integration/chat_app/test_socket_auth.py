"""The socket's login read in the database batch thread (chat_app/socket_auth.py)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from chat_app.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def test_alice_logged_in_drives_her_conversation(conversation, alice_cookie):
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    await socket.send_json_to({"type": "user_message", "text": "hi", "model": "offline"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert frames[0]["type"] == "user_message" and frames[-1]["status"] == "completed"
    await socket.disconnect()


async def test_a_session_whose_password_changed_is_refused(conversation, alice, alice_cookie):
    # Django's login binds the session to the password hash; changing it logs out everywhere.
    alice.set_password("a different password")
    await database_sync_to_async(alice.save)()
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected, "refusals are accepted first so the browser can see the code"
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_made_up_session_is_refused(conversation):
    socket, _, _ = await open_socket(conversation, "not-a-session-key")
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_bob_logged_in_cannot_join_alices_conversation(conversation, bob_cookie):
    socket, _, _ = await open_socket(conversation, bob_cookie)
    assert await close_code(socket) == CLOSE_NOT_FOUND
