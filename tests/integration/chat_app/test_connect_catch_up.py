"""A socket's connect: ownership and catch-up in one database job, and nothing missed when
a turn starts while the socket joins (chat_app/consumers.py, ``ChatConsumer.connect``)."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.layers import get_channel_layer

from chat_app import turn_store, turns
from chat_app.consumers import CLOSE_NOT_FOUND
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


@pytest.fixture
def connect_jobs(monkeypatch):
    """The turn store's calls sockets made while connecting."""
    names: list[str] = []
    real = turn_store.connect

    async def counted(**kwargs):
        names.append("connect")
        return await real(**kwargs)

    monkeypatch.setattr(turn_store, "connect", counted)
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
    assert connected and connect_jobs == ["connect"]
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
            # A turn that outlasts this connect: an offline echo turn ends within a few
            # ms, sooner than this hook's poll, and then there is nothing left to see live.
            await first.send_json_to({"type": "user_message", "text": "/ticker seconds=0.3"})
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


async def test_a_turn_of_another_conversation_started_while_a_tab_connects_costs_no_second_read(
    conversation, alice, alice_cookie, chat_tools, connect_jobs, monkeypatch
):
    from chat_app.services import conversation_create

    other = await asyncio.to_thread(conversation_create, owner=alice)
    busy, _, _ = await open_socket(other, alice_cookie)
    layer = get_channel_layer()
    real_group_add = layer.group_add
    armed = [True]

    async def another_turn_starts_first(group: str, channel: str) -> None:
        if armed[0] and group == turns.events_group(conversation.pk):
            armed[0] = False
            started = turns.turns_started()
            await busy.send_json_to({"type": "user_message", "text": "/echo_twice text=x"})
            deadline = time.monotonic() + 30
            while turns.turns_started() == started:
                assert time.monotonic() < deadline, "the other turn never started"
                await asyncio.sleep(0.005)
        await real_group_add(group, channel)

    monkeypatch.setattr(layer, "group_add", another_turn_starts_first)
    connect_jobs.clear()
    late, connected, _ = await open_socket(conversation, alice_cookie)
    await late.receive_nothing(timeout=0.3)  # no run yet: no catch-up frame
    # The other conversation's start does not make this one's catch-up stale.
    assert connected and not armed[0] and connect_jobs == ["connect"]
    await _turn_done(busy, other.pk)
    await busy.disconnect()
    await late.disconnect()


async def test_a_catch_up_has_every_event_of_the_latest_run_in_order_as_history_has_them(
    conversation, alice_cookie, chat_tools
):
    from chat_app.selectors import run_events

    first, _, _ = await open_socket(conversation, alice_cookie)
    for text in ("/echo_twice text=one", "/echo_twice text=two"):
        await first.send_json_to({"type": "user_message", "text": text})
        await _turn_done(first, conversation.pk)
    late, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await late.receive_json_from(timeout=10)
    latest = await asyncio.to_thread(_latest_run_id, conversation.pk)
    stored = await asyncio.to_thread(_events_of, run_events, latest)
    assert catch_up["run_id"] == latest and catch_up["events"] == stored
    seqs = [event["seq"] for event in catch_up["events"]]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) > 3
    user = next(e for e in catch_up["events"] if e["type"] == "user_message")
    assert user["text"] == "/echo_twice text=two"
    await first.disconnect()
    await late.disconnect()


def _events_of(run_events, run_id: int) -> list:
    from django.db import close_old_connections

    try:
        return run_events(run_id=run_id)
    finally:
        close_old_connections()
