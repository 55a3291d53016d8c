"""A turn's history through the store (chat_app/turn_store/_history.py): a step with its
ledger rows in one sending step, failures kept apart; a run's finish.

On PostgreSQL (``DATABASE_URL``, as ``make test`` runs it again) the steps of several
turns batched together go out in one pipeline; these tests hold on both databases.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from audit_app.models import AuditEvent
from chat_app import turn_store
from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord
from chat_app.turn_store._batch import batched
from chat_app.turn_store._history import finish_job
from tests.integration.chat_app.store_jobs import first_in_line, logged_job
from usage_app.models import ModelCall

pytestmark = pytest.mark.django_db(transaction=True)


def _step(first_seq: int, *, cost: float = 0.25) -> list[dict[str, Any]]:
    return [
        {"seq": first_seq, "type": "text_delta", "text": "hi"},
        {
            "seq": first_seq + 1,
            "type": "model_call",
            "model": "offline",
            "prompt_tokens": 12,
            "completion_tokens": 3,
            "cost_usd": cost,
        },
        {"seq": first_seq + 2, "type": "tool_call_started", "call_id": "c1", "name": "todo_read"},
        {"seq": first_seq + 3, "type": "tool_finished", "call_id": "c1", "preview": "[]"},
    ]


async def _running_run(owner) -> Run:
    conversation = await Conversation.objects.acreate(owner=owner)
    return await Run.objects.acreate(conversation=conversation, model="offline", status="running")


async def _steps_batched_together(*steps: tuple[Run, int, list[dict[str, Any]]]) -> list[Any]:
    results = await asyncio.gather(
        first_in_line(),
        *(
            turn_store.record(run_id=run.pk, owner_id=run_owner, events=events)
            for run, run_owner, events in steps
        ),
        return_exceptions=True,
    )
    return results[1:]


def _seqs(run: Run) -> list[int]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))


async def test_a_step_writes_its_events_call_rows_and_ledger_rows_together(alice):
    run = await _running_run(alice)

    await turn_store.record(run_id=run.pk, events=_step(1), owner_id=alice.pk)

    assert await asyncio.to_thread(_seqs, run) == [1, 2, 3, 4]
    call = await ToolCallRecord.objects.aget(run=run, call_id="c1")
    assert (call.name, call.status, call.result_preview) == ("todo_read", "done", "[]")
    ledger = await ModelCall.objects.aget(run=run)
    assert (ledger.user_id, ledger.prompt_tokens, ledger.completion_tokens) == (alice.pk, 12, 3)
    assert ledger.cost_usd == Decimal("0.25")


async def test_ledger_values_out_of_their_columns_range_are_clamped_not_refused(alice):
    run = await _running_run(alice)
    wild = {"seq": 1, "type": "model_call", "prompt_tokens": -4, "completion_tokens": 10**12}
    wild["cost_usd"] = 1e12

    await turn_store.record(run_id=run.pk, events=[wild], owner_id=alice.pk)

    ledger = await ModelCall.objects.aget(run=run)
    assert (ledger.prompt_tokens, ledger.completion_tokens) == (0, 2**31 - 1)
    assert ledger.cost_usd == Decimal("999999.99999999")


async def test_a_ledger_row_the_database_refuses_is_logged_and_history_and_batch_mates_stay(
    alice, monkeypatch, caplog
):
    from chat_app.turn_store import _history

    runs = [await _running_run(alice) for _ in range(3)]
    refused = runs[1]
    fields = _history.model_call_fields

    def negative_tokens(event: dict[str, Any]) -> dict[str, Any]:
        values = fields(event)
        if event.get("cost_usd") == 9.0:  # only the refused run's call breaks the CHECK
            values["prompt_tokens"] = -1
        return values

    monkeypatch.setattr(_history, "model_call_fields", negative_tokens)

    with caplog.at_level(logging.ERROR, logger="chat_app.turn_store"):
        results = await _steps_batched_together(
            *((run, alice.pk, _step(1, cost=9.0 if run is refused else 0.25)) for run in runs)
        )

    assert results == [None, None, None]
    assert "could not record the model calls" in caplog.text
    for run in runs:
        assert await asyncio.to_thread(_seqs, run) == [1, 2, 3, 4]
        assert await ModelCall.objects.filter(run=run).acount() == (run is not refused)


async def test_history_that_cannot_be_written_fails_alone_even_with_model_calls_in_the_step(
    alice,
):
    run, before, after = [await _running_run(alice) for _ in range(3)]
    await turn_store.record(run_id=run.pk, events=_step(1), owner_id=alice.pk)

    # seq 1..4 of ``run`` are taken: its step is refused, and the ledger must not hide that.
    results = await _steps_batched_together(
        (before, alice.pk, _step(1)), (run, alice.pk, _step(1)), (after, alice.pk, _step(1))
    )

    assert results[0] is None and results[2] is None
    assert isinstance(results[1], Exception)
    assert await ModelCall.objects.filter(run=run).acount() == 1
    for kept in (before, after):
        assert await asyncio.to_thread(_seqs, kept) == [1, 2, 3, 4]
        assert await ModelCall.objects.filter(run=kept).acount() == 1


async def test_a_batch_run_again_writes_each_kept_steps_audit_row_once_with_its_facts(alice):
    """A call's facts are handed out once (``audit_calls_finished``, before the job is
    queued): the batch mates that run again alone after a failure still name the tool
    their earlier event announced, and the refused step writes no row."""
    run, before, after = [await _running_run(alice) for _ in range(3)]
    await turn_store.record(run_id=run.pk, events=_step(1), owner_id=alice.pk)

    await _steps_batched_together(
        (before, alice.pk, _step(1)), (run, alice.pk, _step(1)), (after, alice.pk, _step(1))
    )

    rows = AuditEvent.objects.filter(run_id__in=[before.pk, after.pk]).order_by("run_id")
    stored = [
        (row.run_id, row.tool, row.call_id, row.username, row.user_id, row.conversation_id)
        async for row in rows
    ]
    assert stored == [
        (kept.pk, "todo_read", "c1", "alice", alice.pk, kept.conversation_id)
        for kept in (before, after)
    ]
    assert await AuditEvent.objects.filter(run_id=run.pk).acount() == 1


async def test_finishing_a_run_in_a_batch_closes_it_with_its_calls_and_reply(alice):
    run = await _running_run(alice)
    await turn_store.record(
        run_id=run.pk,
        owner_id=alice.pk,
        events=[{"seq": 1, "type": "tool_call_started", "call_id": "c9", "name": "list_dir"}],
    )

    message = await turn_store.finish(
        run_id=run.pk, status="stopped", text="partial", usage={"cost_usd": 0.1}
    )

    closed = await Run.objects.aget(pk=run.pk)
    assert (closed.status, closed.text, closed.usage, closed.lease_until) == (
        "stopped",
        "partial",
        {"cost_usd": 0.1},
        None,
    )
    assert closed.finished is not None
    assert (message.text, message.role, message.run.status) == ("partial", "assistant", "stopped")
    call = await ToolCallRecord.objects.aget(run=run, call_id="c9")
    assert (call.status, call.is_error) == ("stopped", True)


async def test_budget_checks_batched_with_a_step_answer_each_owner(alice, bob):
    from usage_app.models import UserBudget

    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("1"))
    await UserBudget.objects.acreate(user=bob, monthly_usd=Decimal("1"))
    await ModelCall.objects.acreate(user=alice, model="offline", cost_usd=Decimal("2"))
    alices, bobs = await _running_run(alice), await _running_run(bob)

    results = await asyncio.gather(
        first_in_line(),
        turn_store.budget_refusal(user_id=alice.pk, run_id=alices.pk, turn_cost=0),
        turn_store.record(run_id=bobs.pk, owner_id=bob.pk, events=_step(1)),
        turn_store.budget_refusal(user_id=bob.pk, run_id=bobs.pk, turn_cost=0.5),
    )

    alices_verdict, _, bobs_verdict = results[1:]
    assert "monthly budget is spent (2.00 of 1.00 USD)" in alices_verdict
    # Bob's step (0.25, his run's) is in turn_cost, not counted twice: 0.5 of 1 spent.
    assert bobs_verdict is None
    assert await ModelCall.objects.filter(user=bob).acount() == 1


async def test_a_lone_budget_check_is_answered_at_once(alice):
    run = await _running_run(alice)
    verdict = await turn_store.budget_refusal(user_id=alice.pk, run_id=run.pk, turn_cost=0)
    assert verdict is None  # no budget: no limit


async def test_steps_batched_together_keep_their_order_in_history(alice):
    run = await _running_run(alice)

    await asyncio.gather(
        first_in_line(),
        turn_store.record(run_id=run.pk, owner_id=alice.pk, events=_step(1)),
        turn_store.budget_refusal(user_id=alice.pk, run_id=run.pk, turn_cost=0),
        turn_store.record(run_id=run.pk, owner_id=alice.pk, events=_step(5)),
    )

    assert await asyncio.to_thread(_seqs, run) == list(range(1, 9))


async def _open_call_run(owner) -> Run:
    run = await _running_run(owner)
    await ToolCallRecord.objects.acreate(run=run, call_id="c1", name="list_dir", status="running")
    return run


async def test_a_finish_batched_with_steps_sends_its_locked_read_in_their_pipeline(alice):
    run, other = await _open_call_run(alice), await _running_run(alice)
    log: list[tuple[str, bool]] = []

    results = await asyncio.gather(
        first_in_line(),
        turn_store.record(run_id=other.pk, owner_id=alice.pk, events=_step(1)),
        batched(
            logged_job,
            job=finish_job,
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
    # The locked read in the step's pipeline; then the run's UPDATE, the calls', the
    # conversation's and the reply's INSERT in one more: two round trips on PostgreSQL.
    on_pg = connection.vendor == "postgresql"
    assert len(log) == 5
    assert "FOR UPDATE" in log[0][0] or not on_pg
    assert [pipelined for _, pipelined in log] == [on_pg] * 5


async def test_a_run_closed_before_its_finish_keeps_the_verdict_that_stands(alice):
    run = await _open_call_run(alice)
    # Closed as orphaned by another process while the turn stalled.
    orphaned = await asyncio.to_thread(
        _closing, run_id=run.pk, status="error", text="partial", error="gone"
    )

    message = await turn_store.finish(run_id=run.pk, status="completed", text="late")

    assert message.pk == orphaned.pk and message.run.status == "error"
    closed = await Run.objects.aget(pk=run.pk)
    assert (closed.status, closed.text, closed.error) == ("error", "partial", "gone")
    assert await Message.objects.filter(run=run, role="assistant").acount() == 1


async def test_finishing_a_run_that_does_not_exist_fails_alone_in_its_batch(alice):
    run = await _open_call_run(alice)

    results = await asyncio.gather(
        first_in_line(),
        turn_store.finish(run_id=run.pk + 1000, status="completed", text="x"),
        turn_store.finish(run_id=run.pk, status="completed", text="fine"),
        return_exceptions=True,
    )

    assert isinstance(results[1], Run.DoesNotExist)
    assert results[2].text == "fine"
    assert (await Run.objects.aget(pk=run.pk)).status == "completed"


def _closing(**kwargs):
    from django.db import close_old_connections

    try:
        return turn_store.run_finish(**kwargs)
    finally:
        close_old_connections()
