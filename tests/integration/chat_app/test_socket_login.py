"""The socket's login: Channels' AuthMiddlewareStack (openprogram_site/asgi.py), over a real socket."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.core import signing
from django.utils import timezone

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


async def test_an_expired_session_is_refused(conversation, alice_cookie):
    await Session.objects.filter(session_key=alice_cookie).aupdate(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    socket, _, _ = await open_socket(conversation, alice_cookie)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_session_data_the_server_did_not_sign_is_refused(conversation, alice_cookie, bob):
    # Whoever could write a session row still cannot sign its data: a claim to be bob
    # (with bob's own auth hash) signed with any other key is an empty session.
    store = SessionStore(alice_cookie)
    claim = {
        "_auth_user_id": str(bob.pk),
        "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
        "_auth_user_hash": bob.get_session_auth_hash(),
    }
    forged = signing.dumps(
        claim, key="not the server's key", salt=store.key_salt, serializer=store.serializer
    )
    await Session.objects.filter(session_key=alice_cookie).aupdate(session_data=forged)
    socket, _, _ = await open_socket(conversation, alice_cookie)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_deleted_users_session_is_refused(conversation, alice, alice_cookie):
    await database_sync_to_async(alice.delete)()
    socket, _, _ = await open_socket(conversation.public_id, alice_cookie)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_an_inactive_users_session_is_refused(conversation, alice, alice_cookie):
    alice.is_active = False
    await database_sync_to_async(alice.save)()
    socket, _, _ = await open_socket(conversation, alice_cookie)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_a_session_of_a_backend_no_longer_configured_is_refused(
    conversation, alice_cookie, settings
):
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.RemoteUserBackend"]
    socket, _, _ = await open_socket(conversation, alice_cookie)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_another_backend_is_asked_itself_whom_it_lets_in(conversation, alice, settings):
    # AllowAllUsersModelBackend lets inactive users log in: its own policy decides.
    allow_all = "django.contrib.auth.backends.AllowAllUsersModelBackend"
    settings.AUTHENTICATION_BACKENDS = [allow_all]
    alice.is_active = False
    await database_sync_to_async(alice.save)()
    cookie = await database_sync_to_async(_cookie_from)(alice, allow_all)
    socket, connected, _ = await open_socket(conversation, cookie)
    assert connected and await socket.receive_nothing(timeout=0.3)  # not closed
    await socket.disconnect()


def _cookie_from(user, backend: str) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user, backend=backend)
    return client.cookies["sessionid"].value
