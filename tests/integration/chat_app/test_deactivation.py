"""A deactivated account's sessions, API tokens and login links are gone for good
(accounts/deactivation.py): reactivating it revives none of them. Over a real socket and
real API calls; bob, untouched, is the control that could fail."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.sessions.models import Session
from django.test import AsyncClient

from accounts.models import ApiToken, LoginToken
from accounts.services import (
    InvalidLoginToken,
    api_token_create,
    login_token_create,
    login_token_redeem,
)
from chat_app.consumers import CLOSE_UNAUTHENTICATED
from tests.integration.chat_app.conftest import close_code, open_socket, session_cookie

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def _me(*, cookie: str | None = None, token: str | None = None) -> int:
    client = AsyncClient()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if cookie:
        client.cookies["sessionid"] = cookie
    return (await client.get("/api/me", headers=headers)).status_code


async def _save(user, *, active: bool) -> None:
    user.is_active = active
    await database_sync_to_async(user.save)()


async def test_reactivation_revives_no_session_token_or_login_link(conversation, alice, bob):
    alice_cookie = await database_sync_to_async(session_cookie)(alice)
    other_cookie = await database_sync_to_async(session_cookie)(alice)
    bob_cookie = await database_sync_to_async(session_cookie)(bob)
    alice_token = await database_sync_to_async(api_token_create)(user=alice, name="script")
    bob_token = await database_sync_to_async(api_token_create)(user=bob, name="script")
    link = await database_sync_to_async(login_token_create)(user=alice)
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    for credentials in ({"cookie": alice_cookie}, {"cookie": other_cookie}, {"token": alice_token}):
        assert await _me(**credentials) == 200, credentials

    await _save(alice, active=False)
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED
    await _save(alice, active=True)  # the admin reactivates, for another reason

    for credentials in ({"cookie": alice_cookie}, {"cookie": other_cookie}, {"token": alice_token}):
        assert await _me(**credentials) == 401, credentials
    again, connected, code = await open_socket(conversation, alice_cookie)
    refused = await close_code(again) if connected else code  # refusals accept, then close
    assert refused == CLOSE_UNAUTHENTICATED
    with pytest.raises(InvalidLoginToken):
        await database_sync_to_async(login_token_redeem)(token=link)
    assert not await ApiToken.objects.filter(user=alice).aexists()
    assert not await LoginToken.objects.filter(user=alice).aexists()
    # Bob's login and token were never touched.
    assert await _me(cookie=bob_cookie) == 200
    assert await _me(token=bob_token) == 200
    # Alice signs in afresh and works again.
    fresh = await database_sync_to_async(session_cookie)(alice)
    assert await _me(cookie=fresh) == 200


async def test_a_save_that_does_not_deactivate_revokes_nothing(alice):
    cookie = await database_sync_to_async(session_cookie)(alice)
    token = await database_sync_to_async(api_token_create)(user=alice, name="script")
    alice.first_name = "Alice"
    await database_sync_to_async(alice.save)()
    await _save(alice, active=True)
    assert await _me(cookie=cookie) == 200
    assert await _me(token=token) == 200
    assert await Session.objects.acount() == 1


async def test_a_login_link_of_an_inactive_account_is_refused(alice):
    await _save(alice, active=False)
    link = await database_sync_to_async(login_token_create)(user=alice)
    with pytest.raises(InvalidLoginToken, match="deactivated"):
        await database_sync_to_async(login_token_redeem)(token=link)
    await _save(alice, active=True)
    assert await database_sync_to_async(login_token_redeem)(token=link) == alice  # not spent
