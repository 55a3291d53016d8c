"""A socket's connect reads (chat_app/turn_store/_reads.py): ownership and the latest run's
catch-up in one statement, keyed by the owner; on PostgreSQL sent in a batch's pipeline."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat_app import turn_store
from chat_app.models import Conversation, Message, Run, RunEvent
from chat_app.selectors import run_events
from chat_app.services import conversation_create
from chat_app.turn_store import NOT_READ, run_finish
from chat_app.turn_store._batch import batched, run_alone
from chat_app.turn_store._reads import connect_job
from tests.integration.chat_app.store_jobs import first_in_line, logged_job

pytestmark = pytest.mark.django_db(transaction=True)


def _run_start(conversation: Conversation, text: str) -> Run:
    """A running run with its user message, as a turn's start leaves it."""
    run = Run.objects.create(conversation=conversation, model="offline")
    Message.objects.create(conversation=conversation, run=run, role="user", text=text)
    return run


def _finished_run(owner) -> tuple[Conversation, Run]:
    conversation = conversation_create(owner=owner)
    run = _run_start(conversation, "hello")
    RunEvent.objects.bulk_create(
        [
            RunEvent(run=run, seq=1, type="user_message", payload={"text": "hello"}),
            RunEvent(run=run, seq=2, type="tools_resolved", payload={"model": "offline"}),
            RunEvent(run=run, seq=3, type="text_delta", payload={"text": "hi "}),
            RunEvent(run=run, seq=4, type="text_delta", payload={"text": "alice"}),
        ]
    )
    Run.objects.filter(pk=run.pk).update(tools=["echo"], deferred=["later"], explain={"x": 1})
    run_finish(run_id=run.pk, status="completed", text="hi alice")
    return conversation, run


def _connect_reads(owner_id: int, public_id, **kwargs):
    return run_alone(connect_job(owner_id=owner_id, public_id=public_id, **kwargs))


def test_ownership_and_the_whole_catch_up_are_one_statement(alice):
    conversation, run = _finished_run(alice)
    with CaptureQueriesContext(connection) as queries:
        owned, frame = _connect_reads(alice.pk, conversation.public_id, catch_up=True)
    assert len(queries.captured_queries) == 1
    assert owned == conversation.pk
    assert (frame["type"], frame["run_id"], frame["status"]) == ("catch_up", run.pk, "completed")
    # Exactly what history gives the API, in order, the lists back from the run row.
    assert frame["events"] == run_events(run_id=run.pk)
    assert [e["seq"] for e in frame["events"]] == [1, 2, 3, 4]
    resolved = frame["events"][1]
    assert (resolved["tools"], resolved["deferred"], resolved["explain"]) == (
        ["echo"],
        ["later"],
        {"x": 1},
    )


def test_the_catch_up_is_of_the_latest_run_only(alice):
    conversation, _ = _finished_run(alice)
    second = _run_start(conversation, "again")
    RunEvent.objects.create(run=second, seq=1, type="user_message", payload={"text": "again"})
    run_finish(run_id=second.pk, status="completed", text="ok")
    _, frame = _connect_reads(alice.pk, conversation.public_id, catch_up=True)
    assert frame["run_id"] == second.pk
    assert [(e["seq"], e["text"]) for e in frame["events"]] == [(1, "again")]


def test_a_conversation_without_runs_has_no_catch_up(alice):
    conversation = conversation_create(owner=alice)
    assert _connect_reads(alice.pk, conversation.public_id, catch_up=True) == (
        conversation.pk,
        None,
    )


def test_bob_reads_nothing_of_alices_conversation(alice, bob):
    conversation, _ = _finished_run(alice)
    with CaptureQueriesContext(connection) as queries:
        result = _connect_reads(bob.pk, conversation.public_id, catch_up=True)
    assert result == (None, NOT_READ)
    assert len(queries.captured_queries) == 1
    # Bob's own conversation of the same shape is his, and only his.
    bobs, _ = _finished_run(bob)
    owned, frame = _connect_reads(bob.pk, bobs.public_id, catch_up=True)
    assert owned == bobs.pk and frame["events"] == run_events(run_id=frame["run_id"])
    assert _connect_reads(alice.pk, bobs.public_id, catch_up=True) == (None, NOT_READ)


def test_a_malformed_or_unknown_id_is_not_found_without_a_catch_up(alice):
    with CaptureQueriesContext(connection) as queries:
        assert _connect_reads(alice.pk, "not-a-uuid", catch_up=True) == (None, NOT_READ)
    assert len(queries.captured_queries) == 0
    assert _connect_reads(alice.pk, uuid.uuid4(), catch_up=True) == (None, NOT_READ)


def test_several_processes_read_the_catch_up_after_joining(alice):
    conversation, _ = _finished_run(alice)
    assert _connect_reads(alice.pk, conversation.public_id, catch_up=False) == (
        conversation.pk,
        NOT_READ,
    )


def test_a_run_left_running_by_a_dead_server_is_closed_and_caught_up_as_closed(alice):
    conversation = conversation_create(owner=alice)
    run = _run_start(conversation, "hello")
    RunEvent.objects.create(run=run, seq=1, type="user_message", payload={"text": "hello"})
    owned, frame = _connect_reads(alice.pk, conversation.public_id, catch_up=True)
    assert owned == conversation.pk
    assert (frame["run_id"], frame["status"]) == (run.pk, "error")
    assert [e["type"] for e in frame["events"]] == ["user_message"]


async def test_a_connect_batched_with_writes_rides_their_pipeline(alice):
    conversation, run = await asyncio.to_thread(_finished_run_closing, alice)
    log: list[tuple[str, bool]] = []

    other = await asyncio.to_thread(_finished_run_closing, alice)
    results = await asyncio.gather(
        first_in_line(),
        turn_store.record(run_id=other[1].pk, owner_id=alice.pk, events=[_delta(9)]),
        batched(
            logged_job,
            job=connect_job,
            log=log,
            owner_id=alice.pk,
            public_id=conversation.public_id,
            catch_up=True,
        ),
    )

    owned, frame = results[2]
    assert owned == conversation.pk and frame["run_id"] == run.pk
    # One statement; on PostgreSQL in the batch's one pipeline, not a round trip of its own.
    assert [pipelined for _, pipelined in log] == [connection.vendor == "postgresql"]


def _delta(seq: int) -> dict:
    return {"seq": seq, "type": "text_delta", "text": "more"}


def _finished_run_closing(owner):
    from django.db import close_old_connections

    try:
        return _finished_run(owner)
    finally:
        close_old_connections()
