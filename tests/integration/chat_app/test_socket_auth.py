"""The socket's login read in the database batch thread (chat_app/socket_auth.py)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.core import signing
from django.db import connection
from django.utils import timezone
from django.utils.functional import LazyObject

from chat_app.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED
from chat_app.db_batch import run_batched
from chat_app.socket_auth import socket_user_sent
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until
from tests.integration.chat_app.test_connect_reads import _a_write, _first_in_line, _recorded

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


async def test_a_login_batched_with_writes_sends_its_session_read_in_their_pipeline(
    alice, alice_cookie
):
    session = LazyObject()
    session._wrapped = SessionStore(alice_cookie)
    log: list[tuple[str, bool]] = []

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_a_write),
        run_batched(_recorded, job=socket_user_sent, log=log, scope={"session": session}),
    )

    assert results[2].pk == alice.pk
    # The session row, then the user it names: two statements; on PostgreSQL the
    # session's read shares the writes' pipeline, the user's (alone here) is one more.
    on_pg = connection.vendor == "postgresql"
    assert [pipelined for _, pipelined in log] == [on_pg, False]
    assert "django_session" in log[0][0] and "auth_user" in log[1][0]


def _scope_of(cookie: str) -> dict:
    session = LazyObject()
    session._wrapped = SessionStore(cookie)
    return {"session": session}


async def test_logins_batched_together_read_their_users_in_one_pipeline_each_their_own(
    alice, bob, alice_cookie, bob_cookie
):
    alices_log: list[tuple[str, bool]] = []
    bobs_log: list[tuple[str, bool]] = []

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_recorded, job=socket_user_sent, log=alices_log, scope=_scope_of(alice_cookie)),
        run_batched(_recorded, job=socket_user_sent, log=bobs_log, scope=_scope_of(bob_cookie)),
    )

    assert (results[1].pk, results[2].pk) == (alice.pk, bob.pk)
    on_pg = connection.vendor == "postgresql"
    # The sessions in one pipeline, then both users in another: two round trips for both.
    assert [pipelined for _, pipelined in alices_log] == [on_pg, on_pg]
    assert [pipelined for _, pipelined in bobs_log] == [on_pg, on_pg]


def _fails() -> None:
    raise RuntimeError("this job fails its batch")


async def test_a_login_in_a_batch_that_fails_is_read_again_on_its_own(alice, alice_cookie):
    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(socket_user_sent, scope=_scope_of(alice_cookie)),
        run_batched(_fails),
        return_exceptions=True,
    )
    assert results[1].pk == alice.pk and results[1].is_authenticated
    assert isinstance(results[2], RuntimeError)


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
