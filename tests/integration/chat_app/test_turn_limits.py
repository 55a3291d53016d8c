"""Turn starts per user: how many at once, how many a minute (chat_app/turn_limits.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.db import connection, transaction
from django.utils import timezone

from chat_app.models import Run
from chat_app.services import conversation_create
from chat_app.turn_limits import RUNNING_RETRY_AFTER, owner_turns_statement, turn_start_verdict
from core.api_errors import ThrottledError
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


def turn_start_allow(*, owner_id: int) -> None:
    """The limits' verdict for ``owner_id`` starting a turn now (one statement)."""
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(*owner_turns_statement(owner_id=owner_id, now=now))
        turn_start_verdict(cursor.fetchone(), now=now)


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


def _runs(owner, *, count: int, **fields) -> None:
    conversation = conversation_create(owner=owner)
    for _ in range(count):
        run = Run.objects.create(conversation=conversation, model="offline", **fields)
        if "started" in fields:  # auto_now_add ignores the value given on create
            Run.objects.filter(pk=run.pk).update(started=fields["started"])


def test_a_run_whose_lease_ran_out_holds_no_slot(alice, settings):
    settings.OPENPROGRAM_MAX_CONCURRENT_TURNS, settings.OPENPROGRAM_TURNS_PER_MINUTE = 2, 0
    _runs(alice, count=1, status="running")
    _runs(alice, count=3, status="running", lease_until=timezone.now() - timedelta(seconds=1))
    _runs(alice, count=3, status="completed")
    turn_start_allow(owner_id=alice.pk)  # one live run of two allowed
    _runs(alice, count=1, status="running")
    with pytest.raises(ThrottledError, match="2 at once is the limit") as refused:
        turn_start_allow(owner_id=alice.pk)
    assert refused.value.retry_after == RUNNING_RETRY_AFTER


def test_the_minute_limit_counts_the_last_minute_and_says_when_to_retry(alice, bob, settings):
    settings.OPENPROGRAM_MAX_CONCURRENT_TURNS, settings.OPENPROGRAM_TURNS_PER_MINUTE = 0, 3
    now = timezone.now()
    _runs(alice, count=5, status="completed", started=now - timedelta(seconds=90))
    _runs(bob, count=5, status="completed", started=now - timedelta(seconds=5))
    _runs(alice, count=1, status="completed", started=now - timedelta(seconds=40))
    _runs(alice, count=1, status="completed", started=now - timedelta(seconds=10))
    turn_start_allow(owner_id=alice.pk)  # two in the last minute (bob's do not count)
    _runs(alice, count=1, status="completed", started=now - timedelta(seconds=2))
    with pytest.raises(ThrottledError, match="3 a minute is the limit") as refused:
        turn_start_allow(owner_id=alice.pk)
    # The third latest start (40 s ago) leaves the window in about 20 s.
    assert 18 <= refused.value.retry_after <= 21


def test_the_api_answers_too_many_turns_at_once_with_429_and_retry_after(
    alice, alice_client, settings
):
    settings.OPENPROGRAM_MAX_CONCURRENT_TURNS, settings.OPENPROGRAM_TURNS_PER_MINUTE = 1, 0
    _runs(alice, count=1, status="running")  # a live run in another conversation
    conversation = conversation_create(owner=alice)
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hello"},
        content_type="application/json",
    )
    assert response.status_code == 429
    assert response["Retry-After"] == str(RUNNING_RETRY_AFTER)
    assert response.json()["detail"].startswith("too many turns running: 1 at once is the limit")
    assert not Run.objects.filter(conversation=conversation).exists()
