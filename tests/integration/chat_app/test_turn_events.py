"""A turn's events: written in batched jobs, relayed a step at a time, history first."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.layers import get_channel_layer
from django.db import IntegrityError

from chat_app.models import Conversation, Run, RunEvent
from chat_app.turn_events import _FLUSH_SHARED_SECONDS
from chat_app.turn_store._batch import batched
from chat_app.turns import ActiveTurn, events_group

pytestmark = pytest.mark.django_db(transaction=True)


class _Refused(Exception):
    pass


def _retitle(*, conversation_id: int, title: str, then_fail: bool = False):
    """A store job (chat_app/turn_store/_batch.py) of one reading step."""
    yield
    Conversation.objects.filter(pk=conversation_id).update(title=title)
    if then_fail:
        raise _Refused(title)
    return title


async def test_a_failing_job_fails_alone_and_the_jobs_batched_with_it_are_kept(alice):
    first, second, third = [
        await Conversation.objects.acreate(owner=alice, title="before") for _ in range(3)
    ]

    results = await asyncio.gather(
        batched(_retitle, conversation_id=first.pk, title="one"),
        batched(_retitle, conversation_id=second.pk, title="two", then_fail=True),
        batched(_retitle, conversation_id=third.pk, title="three"),
        return_exceptions=True,
    )

    assert results[0] == "one" and results[2] == "three"
    assert isinstance(results[1], _Refused)
    titles = [(await Conversation.objects.aget(pk=c.pk)).title for c in (first, second, third)]
    assert titles == ["one", "before", "three"]


async def _listening(conversation: Conversation) -> tuple[object, str]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(events_group(conversation.pk), channel)
    return layer, channel


async def test_a_step_reaches_the_tabs_as_one_message_once_history_has_it(alice):
    conversation = await Conversation.objects.acreate(owner=alice)
    run = await Run.objects.acreate(conversation=conversation, model="offline", status="running")
    layer, channel = await _listening(conversation)
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
    )

    for number in range(3):
        await turn.emit({"type": "tool_call_started", "call_id": f"c{number}", "name": "todo_read"})
    message = await asyncio.wait_for(layer.receive(channel), timeout=30)

    assert [json.loads(frame)["seq"] for frame in message["frames"]] == [1, 2, 3]
    stored = [e.seq async for e in RunEvent.objects.filter(run=run).order_by("seq")]
    assert stored == [1, 2, 3]
    assert await run.tool_calls.acount() == 3


async def test_events_history_cannot_take_are_never_relayed_and_end_the_turn(alice):
    conversation = await Conversation.objects.acreate(owner=alice)
    layer, channel = await _listening(conversation)
    missing_run = 987654
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=missing_run, request=None
    )

    await turn.emit({"type": "tool_call_started", "call_id": "c1", "name": "todo_read"})
    with pytest.raises(IntegrityError):
        await turn.flush()

    with pytest.raises(IntegrityError):
        await turn.emit({"type": "tool_finished", "call_id": "c1", "name": "todo_read"})
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(layer.receive(channel), timeout=0.3)


async def _tab(conversation: Conversation) -> tuple[Any, str]:
    """An open tab of ``conversation``: a channel of the real layer in its group."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(events_group(conversation.pk), channel)
    return layer, channel


async def _queued_frames(layer: Any, channel: str) -> list[dict]:
    """The frames of every message waiting in the tab's channel (a receive per message,
    none of which waits: each has its message already)."""
    frames: list[dict] = []
    while layer.pending(channel):
        message = await layer.receive(channel)
        frames.extend(json.loads(frame) for frame in message["frames"])
    return frames


def _collapsed(events: list[dict]) -> list[tuple[str, str]]:
    """Event types in order, a run of text deltas as one, with the text they carry."""
    out: list[tuple[str, str]] = []
    for event in events:
        text = event.get("text", "") if event["type"] == "text_delta" else ""
        if out and event["type"] == "text_delta" and out[-1][0] == "text_delta":
            out[-1] = ("text_delta", out[-1][1] + text)
        else:
            out.append((event["type"], text))
    return out


async def test_a_streamed_piece_is_in_the_tabs_channel_when_emit_returns_and_in_history_after_a_flush(
    alice,
):
    conversation = await Conversation.objects.acreate(owner=alice)
    run = await Run.objects.acreate(conversation=conversation, model="offline", status="running")
    tab = await _tab(conversation)
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
    )

    await turn.emit({"type": "text_delta", "text": "hello"})

    frames = await _queued_frames(*tab)
    assert [(f["type"], f["text"], f["seq"]) for f in frames] == [("text_delta", "hello", 1)]
    await turn.flush()
    stored = [e.payload async for e in RunEvent.objects.filter(run=run).order_by("seq")]
    assert [e["text"] for e in stored] == ["hello"]


async def test_history_and_the_socket_see_the_same_events_in_the_same_order(alice):
    conversation = await Conversation.objects.acreate(owner=alice)
    run = await Run.objects.acreate(conversation=conversation, model="offline", status="running")
    tab = await _tab(conversation)
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
    )
    emitted = []
    for number in range(3):
        for piece in range(20):
            emitted.append({"type": "text_delta", "text": f"{number}.{piece} "})
        emitted.append({"type": "tool_call_started", "call_id": f"c{number}", "name": "todo_read"})
        emitted.append({"type": "tool_finished", "call_id": f"c{number}", "name": "todo_read"})
    emitted.append({"type": "text_delta", "text": "done"})
    emitted.append({"type": "turn_finished", "stop_reason": "completed"})

    for event in emitted:
        await turn.emit(event)
    await turn.flush()
    frames = await _queued_frames(*tab)

    stored = [e async for e in RunEvent.objects.filter(run=run).order_by("seq")]
    history = [{"type": e.type, **e.payload} for e in stored]
    assert _collapsed(frames) == _collapsed(history) == _collapsed(emitted)
    assert [f["seq"] for f in frames] == sorted(f["seq"] for f in frames)


async def test_streamed_text_of_turns_moments_apart_is_written_by_one_timer_never_late(alice):
    """Turns whose timed writes fall due within 50 ms share a timer, so their writes reach
    the database together (one batch, not one per turn); none is written after its own
    0.25 s, and the later ones at most 50 ms before theirs."""
    loop = asyncio.get_running_loop()
    turns, written_at, stored_by, dues = [], {}, set(), []
    for number in range(3):
        conversation = await Conversation.objects.acreate(owner=alice)
        run = await Run.objects.acreate(
            conversation=conversation, model="offline", status="running"
        )
        turn = ActiveTurn(
            conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
        )

        async def written(number=number, write=turn._write_history, **kwargs):
            written_at.setdefault(number, loop.time())
            await write(**kwargs)
            stored_by.add(number)  # its rows are committed: the test may read them

        turn._write_history = written
        turns.append((turn, run))

    timers = []
    for number, (turn, _) in enumerate(turns):
        await turn.emit({"type": "text_delta", "text": f"turn {number}"})
        dues.append(turn._flush_due)
        timers.append(turn._flush_timer)
        await asyncio.sleep(0.01)  # the next turn's piece comes a moment later

    async with asyncio.timeout(60):
        while len(stored_by) < 3:
            await asyncio.sleep(0.02)
    for number, (_, run) in enumerate(turns):
        stored = [e.payload["text"] async for e in RunEvent.objects.filter(run=run)]
        assert stored == [f"turn {number}"]
    for number, due in enumerate(dues):
        assert due - _FLUSH_SHARED_SECONDS <= written_at[number]
    for number in (1, 2):  # the same timer as the first turn's, if its slack covers it
        if dues[number] - dues[0] < _FLUSH_SHARED_SECONDS:
            assert timers[number] is timers[0]
        else:  # a machine too slow to emit within the slack: a timer of its own
            assert timers[number] is not timers[0]
            assert written_at[number] >= dues[number]
    assert all(turn._flush_timer is None for turn, _ in turns)  # each went off once
