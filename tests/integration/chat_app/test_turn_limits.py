"""Turn starts per user: how many at once, how many a minute (chat_app/turn_limits.py)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from chat_app.models import Run
from chat_app.services import conversation_create
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


def _refusal(frame: dict) -> bool:
    return frame["type"] == "error" and "run_id" not in frame


async def test_a_third_turn_at_once_is_refused_and_starts_once_one_finishes(
    alice, alice_cookie, chat_tools, settings
):
    settings.OPENPROGRAM_MAX_CONCURRENT_TURNS = 2
    conversations = [
        await database_sync_to_async(conversation_create)(owner=alice) for _ in range(3)
    ]
    sockets = [(await open_socket(c, alice_cookie))[0] for c in conversations]
    for socket in sockets[:2]:
        await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
        await receive_until(socket, of_type("tool_call_started"))
    await sockets[2].send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    refused = (await receive_until(sockets[2], _refusal))[-1]
    assert refused["kind"] == "throttled"
    assert refused["message"].startswith("too many turns running: 2 at once is the limit")
    assert await database_sync_to_async(Run.objects.count)() == 2
    await sockets[0].send_json_to({"type": "stop"})
    await receive_until(sockets[0], of_type("assistant_message"))
    await sockets[2].send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    finished = (await receive_until(sockets[2], of_type("assistant_message")))[-1]
    assert finished["status"] == "completed"
    await sockets[1].send_json_to({"type": "stop"})
    await receive_until(sockets[1], of_type("assistant_message"))
    for socket in sockets:
        await socket.disconnect()


async def test_bobs_turns_do_not_count_against_alice(
    alice, bob, alice_cookie, bob_cookie, chat_tools, settings
):
    settings.OPENPROGRAM_TURNS_PER_MINUTE = 1
    alices = await database_sync_to_async(conversation_create)(owner=alice)
    bobs = await database_sync_to_async(conversation_create)(owner=bob)
    bob_socket, _, _ = await open_socket(bobs, bob_cookie)
    await bob_socket.send_json_to({"type": "user_message", "text": "/echo_twice text=b"})
    await receive_until(bob_socket, of_type("assistant_message"))
    await bob_socket.send_json_to({"type": "user_message", "text": "/echo_twice text=b"})
    assert (await receive_until(bob_socket, _refusal))[-1]["kind"] == "throttled"
    alice_socket, _, _ = await open_socket(alices, alice_cookie)
    await alice_socket.send_json_to({"type": "user_message", "text": "/echo_twice text=a"})
    finished = (await receive_until(alice_socket, of_type("assistant_message")))[-1]
    assert finished["status"] == "completed"
    await bob_socket.disconnect()
    await alice_socket.disconnect()
