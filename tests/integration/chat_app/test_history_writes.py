"""A turn's step into history with its ledger rows: one pipelined write, failures kept apart.

On PostgreSQL (``DATABASE_URL``, as ``make test`` runs it again) a step's statements go
out in one round trip, and the steps of several turns batched together in one pipeline;
these tests hold on both databases.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction

from chat_app.db_batch import read_after_send, run_batched, write_only
from chat_app.models import Conversation, Run, RunEvent, ToolCallRecord
from chat_app.services import run_finish, run_record_events, run_start
from chat_app.turn_events import _history_write
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


def _first_in_line() -> None:
    """A job that starts a batch alone, so the jobs gathered after it share the next one."""


async def _steps_batched_together(*steps: tuple[Run, list[dict[str, Any]]]) -> list[Any]:
    results = await asyncio.gather(
        run_batched(_first_in_line),
        *(
            run_batched(_history_write, run_id=run.pk, owner_id=run_owner, events=events)
            for run, run_owner, events in steps
        ),
        return_exceptions=True,
    )
    return results[1:]


def _seqs(run: Run) -> list[int]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))


async def test_a_step_writes_its_events_call_rows_and_ledger_rows_together(alice):
    run = await _running_run(alice)

    await run_batched(run_record_events, run_id=run.pk, events=_step(1), owner_id=alice.pk)

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

    await run_batched(run_record_events, run_id=run.pk, events=[wild], owner_id=alice.pk)

    ledger = await ModelCall.objects.aget(run=run)
    assert (ledger.prompt_tokens, ledger.completion_tokens) == (0, 2**31 - 1)
    assert ledger.cost_usd == Decimal("999999.99999999")


async def test_a_ledger_row_the_database_refuses_is_logged_and_history_and_batch_mates_stay(
    alice, monkeypatch, caplog
):
    from usage_app import services as usage_services

    runs = [await _running_run(alice) for _ in range(3)]
    refused = runs[1]
    fields = usage_services.model_call_fields

    def negative_tokens(event: dict[str, Any]) -> dict[str, Any]:
        values = fields(event)
        if event.get("cost_usd") == 9.0:  # only the refused run's call breaks the CHECK
            values["prompt_tokens"] = -1
        return values

    monkeypatch.setattr(usage_services, "model_call_fields", negative_tokens)

    with caplog.at_level(logging.ERROR, logger="chat_app.run_recording"):
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
    await run_batched(run_record_events, run_id=run.pk, events=_step(1), owner_id=alice.pk)

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


async def test_finishing_a_run_in_a_batch_closes_it_with_its_calls_and_reply(alice):
    run = await _running_run(alice)
    await run_batched(
        run_record_events,
        run_id=run.pk,
        events=[{"seq": 1, "type": "tool_call_started", "call_id": "c9", "name": "list_dir"}],
    )

    message = await run_batched(
        run_finish, run_id=run.pk, status="stopped", text="partial", usage={"cost_usd": 0.1}
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


def test_starting_a_turn_in_a_batch_closes_a_leftover_run_without_a_savepoint(alice):
    conversation = Conversation.objects.create(owner=alice)
    leftover, _ = run_start(conversation=conversation, text="one", attended=True)
    statements: list[str] = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    # As in a batch (chat_app.db_batch): inside a transaction, where a savepoint would be
    # two more round trips on PostgreSQL.
    with transaction.atomic(), connection.execute_wrapper(record):
        run, _ = run_start(
            conversation=conversation, text="two", attended=True, abandon_running=True
        )

    leftover.refresh_from_db()
    assert (leftover.status, leftover.error) == ("error", "the server running this turn stopped")
    assert Run.objects.get(pk=run.pk).status == "running"
    assert not [sql for sql in statements if "SAVEPOINT" in sql.upper()]


@write_only
def _seen_pipeline(*, seen: list[bool]) -> None:
    seen.append(bool(connection.connection.pgconn.pipeline_status))


def _seen_plain(*, seen: list[bool]) -> None:
    seen.append(bool(connection.connection.pgconn.pipeline_status))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pipelines are PostgreSQL's")
async def test_the_write_only_jobs_of_a_batch_share_one_pipeline_even_between_other_jobs():
    seen: list[bool] = []

    await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_seen_pipeline, seen=seen),
        run_batched(_seen_plain, seen=seen),
        run_batched(_seen_pipeline, seen=seen),
    )

    assert seen == [True, True, False]


@write_only
def _logged_write(*, log: list[str], name: str) -> None:
    log.append(name)


def _logged_read(*, log: list[str], name: str) -> str:
    log.append(name)
    return f"read {name}"


async def test_a_batch_runs_its_writes_first_in_their_order_and_each_caller_gets_its_own_result():
    log: list[str] = []

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_logged_read, log=log, name="budget"),
        run_batched(_logged_write, log=log, name="step 1"),
        run_batched(_logged_read, log=log, name="start"),
        run_batched(_logged_write, log=log, name="step 2"),
    )

    assert log == ["step 1", "step 2", "budget", "start"]
    assert results[1:] == ["read budget", None, "read start", None]


async def test_steps_batched_between_other_jobs_keep_their_order_in_history(alice):
    run = await _running_run(alice)
    log: list[str] = []

    await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_history_write, run_id=run.pk, owner_id=alice.pk, events=_step(1)),
        run_batched(_logged_read, log=log, name="budget"),
        run_batched(_history_write, run_id=run.pk, owner_id=alice.pk, events=_step(5)),
    )

    assert await asyncio.to_thread(_seqs, run) == list(range(1, 9))
    assert log == ["budget"]


@read_after_send
def _seen_sent(*, seen: list[str]):
    seen.append("sent in a pipeline" if connection.connection.pgconn.pipeline_status else "alone")
    return lambda: len(seen)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pipelines are PostgreSQL's")
async def test_a_batchs_sending_jobs_join_its_writes_pipeline_and_read_after_it():
    seen: list[str] = []

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(_seen_sent, seen=seen),
        run_batched(_seen_pipeline, seen=seen),
        run_batched(_seen_sent, seen=seen),
    )

    # The write first, then the sends, each read only after all three were sent.
    assert seen == [True, "sent in a pipeline", "sent in a pipeline"]
    assert results[1:] == [3, None, 3]


async def test_budget_checks_batched_with_a_step_answer_each_owner(alice, bob):
    from chat_app.turn_limits import turn_budget_refusal_sent
    from usage_app.models import UserBudget

    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("1"))
    await UserBudget.objects.acreate(user=bob, monthly_usd=Decimal("1"))
    await ModelCall.objects.acreate(user=alice, model="offline", cost_usd=Decimal("2"))
    alices, bobs = await _running_run(alice), await _running_run(bob)

    results = await asyncio.gather(
        run_batched(_first_in_line),
        run_batched(turn_budget_refusal_sent, user_id=alice.pk, run_id=alices.pk, turn_cost=0),
        run_batched(_history_write, run_id=bobs.pk, owner_id=bob.pk, events=_step(1)),
        run_batched(turn_budget_refusal_sent, user_id=bob.pk, run_id=bobs.pk, turn_cost=0.5),
    )

    alices_verdict, _, bobs_verdict = results[1:]
    assert "monthly budget is spent (2.00 of 1.00 USD)" in alices_verdict
    # Bob's step (0.25, his run's) is in turn_cost, not counted twice: 0.5 of 1 spent.
    assert bobs_verdict is None
    assert await ModelCall.objects.filter(user=bob).acount() == 1


async def test_a_lone_budget_check_is_answered_at_once(alice):
    from chat_app.turn_limits import turn_budget_refusal_sent

    run = await _running_run(alice)
    verdict = await run_batched(
        turn_budget_refusal_sent, user_id=alice.pk, run_id=run.pk, turn_cost=0
    )
    assert verdict is None  # no budget: no limit
