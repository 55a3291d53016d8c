"""A turn's finish as a batch job (chat_app/run_lifecycle.py, ``run_finish_sent``): the
run's locked read sent with the batch's writes, the run closed after it."""

from __future__ import annotations

import asyncio

import pytest
from django.db import connection

from chat_app.db_batch import run_batched
from chat_app.models import Conversation, Message, Run, ToolCallRecord
from chat_app.run_lifecycle import run_finish_sent
from chat_app.services import run_finish
from tests.integration.chat_app.test_connect_reads import _a_write, _first_in_line, _recorded

pytestmark = pytest.mark.django_db(transaction=True)


async def _running_run(owner) -> Run:
    conversation = await Conversation.objects.acreate(owner=owner)
    run = await Run.objects.acreate(conversation=conversation, model="offline", status="running")
    await ToolCallRecord.objects.acreate(run=run, call_id="c1", name="list_dir", status="running")
    return run


async def test_a_finish_batched_with_writes_sends_its_locked_read_in_their_pipeline(alice):
    run = await _running_run(alice)
    log: list[tuple[str, bool]] = []

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_a_write),
        run_batched(
            _recorded,
            job=run_finish_sent,
            log=log,
            run_id=run.pk,
            status="completed",
            text="done, alice",
            usage={"cost_usd": 0.5},
        ),
    )

    message = results[2]
    stored = await Message.objects.aget(pk=message.pk)
    assert (stored.role, stored.text, stored.run_id) == ("assistant", "done, alice", run.pk)
    closed = await Run.objects.aget(pk=run.pk)
    assert (closed.status, closed.text, closed.usage, closed.lease_until) == (
        "completed",
        "done, alice",
        {"cost_usd": 0.5},
        None,
    )
    call = await ToolCallRecord.objects.aget(run=run, call_id="c1")
    assert (call.status, call.is_error) == ("error", True)
    assert message.run.status == "completed"
    # The locked read, then the run's UPDATE, the calls', the conversation's and the
    # reply's INSERT in one pipeline: on PostgreSQL two round trips, the first shared.
    on_pg = connection.vendor == "postgresql"
    assert len(log) == 5
    assert "FOR UPDATE" in log[0][0] or not on_pg
    assert [pipelined for _, pipelined in log] == [on_pg] * 5


async def test_a_run_closed_before_its_finish_keeps_the_verdict_that_stands(alice):
    run = await _running_run(alice)
    # Closed as orphaned by another process while the turn stalled.
    orphaned = await asyncio.to_thread(
        _closing, run_finish, run_id=run.pk, status="error", text="partial", error="gone"
    )

    message = await run_batched(run_finish_sent, run_id=run.pk, status="completed", text="late")

    assert message.pk == orphaned.pk and message.run.status == "error"
    closed = await Run.objects.aget(pk=run.pk)
    assert (closed.status, closed.text, closed.error) == ("error", "partial", "gone")
    assert await Message.objects.filter(run=run, role="assistant").acount() == 1


async def test_finishing_a_run_that_does_not_exist_fails_alone_in_its_batch(alice):
    run = await _running_run(alice)

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(run_finish_sent, run_id=run.pk + 1000, status="completed", text="x"),
        run_batched(run_finish_sent, run_id=run.pk, status="completed", text="fine"),
        return_exceptions=True,
    )

    assert isinstance(results[1], Run.DoesNotExist)
    assert results[2].text == "fine"
    assert (await Run.objects.aget(pk=run.pk)).status == "completed"


def _closing(fn, **kwargs):
    from django.db import close_old_connections

    try:
        return fn(**kwargs)
    finally:
        close_old_connections()
