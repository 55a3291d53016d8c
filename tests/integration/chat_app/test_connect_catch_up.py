"""A socket's connect: ownership and catch-up in one database job, and nothing missed when
a turn starts while the socket joins (chat_app/consumers.py, ``ChatConsumer.connect``)."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.layers import get_channel_layer

from chat_app import consumers, turns
from chat_app.consumers import CLOSE_NOT_FOUND
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


@pytest.fixture
def connect_jobs(monkeypatch):
    """The names of the database jobs sockets ran while connecting."""
    names: list[str] = []
    real = consumers.run_batched

    async def counted(fn, /, **kwargs):
        names.append(fn.__name__)
        return await real(fn, **kwargs)

    monkeypatch.setattr(consumers, "run_batched", counted)
    return names


async def _turn_done(socket, conversation_id: int) -> None:
    await receive_until(socket, of_type("assistant_message"))
    deadline = time.monotonic() + 30
    while turns.turn_in_flight(conversation_id):  # its last events are being stored
        assert time.monotonic() < deadline, "the turn never ended"
        await asyncio.sleep(0.01)


async def test_a_finished_turn_is_caught_up_in_the_ownership_checks_job(
    conversation, alice_cookie, chat_tools, connect_jobs
):
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    await _turn_done(first, conversation.pk)
    connect_jobs.clear()
    late, connected, _ = await open_socket(conversation, alice_cookie)
    catch_up = await late.receive_json_from(timeout=10)
    assert connected and connect_jobs == ["_connect_reads"]
    assert catch_up["type"] == "catch_up" and catch_up["status"] == "completed"
    kinds = [event["type"] for event in catch_up["events"]]
    assert kinds[0] == "user_message" and kinds[-1] == "assistant_message"
    resolved = next(e for e in catch_up["events"] if e["type"] == "tools_resolved")
    assert "echo_twice" in resolved["tools"]
    await first.disconnect()
    await late.disconnect()


async def test_bob_gets_4404_and_no_catch_up_of_alices_turn(
    conversation, alice_cookie, bob_cookie, chat_tools
):
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/echo_twice text=secret"})
    await _turn_done(first, conversation.pk)
    intruder, _, _ = await open_socket(conversation, bob_cookie)
    assert await close_code(intruder) == CLOSE_NOT_FOUND
    assert await intruder.receive_nothing(timeout=0.2)
    await first.disconnect()


async def test_a_turn_started_while_a_tab_connects_is_caught_up_after_joining(
    conversation, alice_cookie, chat_tools, monkeypatch
):
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/echo_twice text=one"})
    await _turn_done(first, conversation.pk)
    first_run = await asyncio.to_thread(_latest_run_id, conversation.pk)
    layer = get_channel_layer()
    real_group_add = layer.group_add
    armed = [True]

    async def a_turn_starts_first(group: str, channel: str) -> None:
        # The socket has read its catch-up (the first run, finished) and is about to
        # join the conversation's group: another tab starts a turn just before it does.
        if armed[0] and group == turns.events_group(conversation.pk):
            armed[0] = False
            started = turns.turns_started()
            await first.send_json_to({"type": "user_message", "text": "/echo_twice text=two"})
            deadline = time.monotonic() + 30
            while turns.turns_started() == started:
                assert time.monotonic() < deadline, "the second turn never started"
                await asyncio.sleep(0.005)
        await real_group_add(group, channel)

    monkeypatch.setattr(layer, "group_add", a_turn_starts_first)
    late, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await late.receive_json_from(timeout=10)
    # Read again after joining: the new turn's run, not the stale read of the first.
    assert catch_up["run_id"] != first_run
    live = await receive_until(late, of_type("assistant_message"))
    seen = catch_up["events"] + [f for f in live if f.get("run_id") == catch_up["run_id"]]
    kinds = [event["type"] for event in seen]
    assert "user_message" in kinds and kinds[-1] == "assistant_message"
    await _turn_done(first, conversation.pk)
    await first.disconnect()
    await late.disconnect()


def _latest_run_id(conversation_id: int) -> int:
    from django.db import close_old_connections

    from chat_app.models import Run

    try:
        return Run.objects.filter(conversation_id=conversation_id).latest("id").pk
    finally:
        close_old_connections()
