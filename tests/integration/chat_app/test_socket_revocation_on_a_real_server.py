"""Sockets die with their login across processes: a real daphne on the Redis channel layer.

Each trigger runs in another process (``manage.py shell``), so the only way the message
reaches the socket is the per-user group over Redis (accounts/session_revocation.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from chat_app.consumers import CLOSE_UNAUTHENTICATED
from tests.integration.sandbox.chat_socket import ChatSession, chat_sessions
from tests.servers import DaphneServer, make_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[DaphneServer]:
    server = make_server(tmp_path_factory.mktemp("revocation") / "home", REDIS_URL=redis_url)
    server.create_users()
    server.start()
    yield server
    server.stop()


def _key(session: ChatSession) -> str:
    return session.cookie.split("=", 1)[1]


async def _closed_with(ws, timeout: float = 30) -> int | None:
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None


async def _still_open(ws) -> bool:
    try:
        await asyncio.wait_for(ws.recv(), 0.5)
    except TimeoutError:
        return True
    return True


async def _turn_completes(ws) -> None:
    await ws.send(json.dumps({"type": "user_message", "text": "hi"}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if frame["type"] == "turn_finished":
            return


def _open(session: ChatSession):
    return connect(
        session.url, origin=session.origin, additional_headers={"Cookie": session.cookie}
    )


async def _shell(server: DaphneServer, code: str) -> None:
    await asyncio.to_thread(server.shell, code)


async def test_logout_in_another_process_closes_that_sessions_socket_only(server):
    first = chat_sessions(server, "alice")["alice"]
    second = chat_sessions(server, "alice")["alice"]
    async with _open(first) as ws, _open(second) as other:
        await _shell(
            server,
            "from django.test import Client; c = Client(HTTP_HOST='127.0.0.1');"
            f"c.cookies['sessionid'] = {_key(first)!r};"
            "assert c.post('/logout/').status_code in (200, 302)",
        )
        assert await _closed_with(ws) == CLOSE_UNAUTHENTICATED
        assert await _still_open(other)
        await _turn_completes(other)


async def test_a_flushed_session_closes_its_socket(server):
    session = chat_sessions(server, "alice")["alice"]
    async with _open(session) as ws:
        await _shell(
            server,
            "from django.contrib.sessions.backends.db import SessionStore;"
            f"SessionStore({_key(session)!r}).flush()",
        )
        assert await _closed_with(ws) == CLOSE_UNAUTHENTICATED


async def test_a_password_set_by_an_admin_closes_the_users_socket(server):
    session = chat_sessions(server, "bob")["bob"]
    async with _open(session) as ws:
        await _shell(
            server,
            "from django.contrib.auth import get_user_model as g;"
            "u = g().objects.get(username='bob'); u.set_password('set by the admin 42'); u.save()",
        )
        assert await _closed_with(ws) == CLOSE_UNAUTHENTICATED


async def test_deactivation_closes_the_users_socket(server):
    session = chat_sessions(server, "root")["root"]
    async with _open(session) as ws:
        await _shell(
            server,
            "from django.contrib.auth import get_user_model as g;"
            "u = g().objects.get(username='root'); u.is_active = False; u.save()",
        )
        assert await _closed_with(ws) == CLOSE_UNAUTHENTICATED
