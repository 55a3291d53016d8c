"""After a crash: leftover runs closed at start-up; streamed text due on disk within 0.25 s."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from chat_app.models import Conversation, Run, RunEvent
from chat_app.turn_events import _FLUSH_AFTER_SECONDS, _FLUSH_SHARED_SECONDS
from chat_app.turn_store import ORPHANED_RUN_ERROR, runs_close_at_startup

pytestmark = pytest.mark.django_db(transaction=True)


def _running(conversation: Conversation, *, lease_seconds: int) -> Run:
    run = Run.objects.create(
        conversation=conversation,
        model="offline",
        status="running",
        lease_until=timezone.now() + timedelta(seconds=lease_seconds),
    )
    RunEvent.objects.create(run=run, seq=1, type="text_delta", payload={"text": "half an ans"})
    return run


def test_with_several_processes_only_lapsed_leases_are_closed_at_startup(alice):
    conversation = Conversation.objects.create(owner=alice)
    dead = _running(conversation, lease_seconds=-5)
    alive = _running(Conversation.objects.create(owner=alice), lease_seconds=30)

    assert runs_close_at_startup(single_process=False) == 1

    dead.refresh_from_db()
    alive.refresh_from_db()
    assert (dead.status, dead.error) == ("error", ORPHANED_RUN_ERROR)
    assert dead.messages.get(role="assistant").text == "half an ans"
    assert alive.status == "running"


def test_with_one_process_every_run_left_running_is_closed_at_startup(alice, client):
    conversation = Conversation.objects.create(owner=alice)
    run = _running(conversation, lease_seconds=30)  # killed a second ago: lease still fresh

    assert runs_close_at_startup(single_process=True) == 1

    client.force_login(alice)
    assert client.get(f"/api/runs/{run.pk}").json()["status"] == "error"


async def test_streamed_text_is_written_on_a_timer_without_a_next_event(alice):
    from chat_app.turns import ActiveTurn

    conversation = await Conversation.objects.acreate(owner=alice)
    run = await Run.objects.acreate(conversation=conversation, model="offline", status="running")
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
    )

    dues: list[float | None] = []
    buffer_streamed = turn._buffer_streamed
    written_at: list[float] = []
    write_history = turn._write_history

    def buffered(events):  # what the piece left behind: its timed write
        due = buffer_streamed(events)
        dues.append(turn._flush_due if turn._flush_timer is not None else None)
        return due

    async def written(*args, **kwargs):
        written_at.append(asyncio.get_running_loop().time())
        await write_history(*args, **kwargs)

    turn._buffer_streamed = buffered
    turn._write_history = written
    loop = asyncio.get_running_loop()
    before = loop.time()
    await turn.emit({"type": "text_delta", "text": "the model then stalls"})
    after = loop.time()
    # Buffered, not written: a write is due on a timer 0.25 s after the piece, whatever
    # else happens (checked on the loop's clock, so a slow machine cannot make it fail).
    [due] = dues
    assert due is not None, "the piece was not buffered for a timed write"
    assert before + _FLUSH_AFTER_SECONDS <= due <= after + _FLUSH_AFTER_SECONDS

    deadline = time.monotonic() + 60
    while not await RunEvent.objects.filter(run=run).aexists():
        assert time.monotonic() < deadline, "the buffered text was never written"
        await asyncio.sleep(0.02)
    event = await RunEvent.objects.aget(run=run)
    assert event.payload["text"] == "the model then stalls"
    # Written by that timer (a shared one may go off up to its slack early), once.
    [at] = written_at
    assert due - _FLUSH_SHARED_SECONDS <= at
    assert turn._flush_timer is None
