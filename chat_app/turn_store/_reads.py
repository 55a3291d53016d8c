"""The turn store's reads: a socket's connect (ownership and catch-up), the budget check,
an API turn's token re-check.

Every socket connect checks that its user owns the conversation and, on one process,
reads the catch-up of the conversation's latest run: its status, its events, and the
tool lists its ``tools_resolved`` event gets back from the run row. That is one
statement, keyed by the owner and the public id together, so a conversation of someone
else's yields no row and none of its events are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model

from accounts.models import ApiToken
from chat_app.models import Conversation, Run, RunEvent
from chat_app.turn_registry import active_turn, single_process_layer, turn_in_flight
from chat_app.turn_store._batch import Job, send
from chat_app.turn_store._orphans import run_abandon_orphans, run_expire_orphans
from core.model_sql import column, db_value, python_value, table
from usage_app.selectors import budget_and_spend_row, budget_and_spend_statement
from usage_app.services import budget_verdict

__all__ = ["NOT_READ", "budget_job", "connect_job", "token_job"]

NOT_READ: Any = object()
"""No catch-up was read (several processes, or a turn of the conversation in flight): the
socket reads it after joining the conversation's group."""

_RUN_LISTS = ("tools", "deferred", "explain")


def connect_job(
    *, owner_id: int, public_id: str | UUID, catch_up: bool, even_in_flight: bool = False
) -> Job[tuple[int | None, Any]]:
    """``(key, frame)``: the conversation's key if ``owner_id`` owns it (else
    ``(None, NOT_READ)``) and its catch-up frame (None when it has no run yet). The frame
    is ``NOT_READ`` without ``catch_up``, and while a turn of the conversation is in
    flight unless ``even_in_flight`` (its events may not all be in history yet)."""
    try:
        key = public_id if isinstance(public_id, UUID) else UUID(str(public_id))
    except ValueError:  # a malformed id is simply not found
        return None, NOT_READ
    sent = _connect_send(owner_id=owner_id, key=key, events=catch_up)
    yield
    rows = sent.all()
    if not rows or rows[0][0] != 0:  # the header row comes first, if the owner's
        return None, NOT_READ
    owned = rows[0][1]
    if not catch_up or (turn_in_flight(owned) and not even_in_flight):
        return owned, NOT_READ
    return owned, _frame(owner_id=owner_id, key=key, rows=rows)


def _connect_send(*, owner_id: int, key: UUID, events: bool) -> Any:
    public_id = db_value(Conversation, "public_id", key)
    return send(_connect_sql(events), [owner_id, public_id] * (2 if events else 1))


def _frame(*, owner_id: int, key: UUID, rows: list[Sequence[Any]]) -> dict[str, Any] | None:
    owned, run_id, status = rows[0][1], rows[0][2], rows[0][3]
    if run_id is None:
        return None
    if status == "running" and active_turn(owned) is None:
        # One process: nobody else can run it. Several: only if its lease ran out.
        if single_process_layer():
            closed = run_abandon_orphans(conversation_id=owned)
        else:
            closed = run_expire_orphans(conversation_id=owned)
        if closed:
            rows = _connect_send(owner_id=owner_id, key=key, events=True).all()
            if not rows or rows[0][2] is None:
                return None
            run_id, status = rows[0][2], rows[0][3]
    payload = RunEvent._meta.get_field("payload")
    events = [
        {**python_value(payload, value), "type": kind, "seq": seq, "run_id": run_id}
        for _, seq, _, kind, value, _, _ in rows[1:]
    ]
    for event in events:
        # The lists are kept on the run, not in the event row (chat_app.turn_events).
        if event["type"] == "tools_resolved" and "tools" not in event:
            event.update(
                {
                    name: python_value(Run._meta.get_field(name), value)
                    for name, value in zip(_RUN_LISTS, rows[0][4:7], strict=True)
                }
            )
    return {"type": "catch_up", "run_id": run_id, "status": status, "events": events}


@cache
def _connect_sql(events: bool) -> str:
    """``0, conversation key, latest run's key, status, tools, deferred, explain`` (one row,
    the run's columns NULL when it has none), then with ``events`` one
    ``1, seq, NULL, type, payload, NULL, NULL`` row per event of that run, in order.
    Parameters: the owner and the public id (twice with ``events``)."""
    conversation, run, event = table(Conversation), table(Run), table(RunEvent)
    c_id, r_id = column(Conversation, "id"), column(Run, "id")
    started, of_conversation = column(Run, "started"), column(Run, "conversation")
    owned = f"c.{column(Conversation, 'owner')} = %s AND c.{column(Conversation, 'public_id')} = %s"
    latest = f"ORDER BY l.{started} DESC, l.{r_id} DESC LIMIT 1"
    lists = ", ".join(f"r.{column(Run, name)}" for name in _RUN_LISTS)
    header = (
        f"SELECT 0, c.{c_id}, r.{r_id}, r.{column(Run, 'status')}, {lists} "
        f"FROM {conversation} c LEFT OUTER JOIN {run} r ON r.{r_id} = "
        f"(SELECT l.{r_id} FROM {run} l WHERE l.{of_conversation} = c.{c_id} {latest}) "
        f"WHERE {owned}"
    )
    if not events:
        return header
    return (
        f"{header} UNION ALL "
        f"SELECT 1, e.{column(RunEvent, 'seq')}, NULL, e.{column(RunEvent, 'type')}, "
        f"e.{column(RunEvent, 'payload')}, NULL, NULL FROM {event} e "
        f"WHERE e.{column(RunEvent, 'run')} = (SELECT l.{r_id} FROM {run} l "
        f"INNER JOIN {conversation} c ON l.{of_conversation} = c.{c_id} WHERE {owned} {latest}) "
        f"ORDER BY 1, 2"
    )


def token_job(*, token_id: int) -> Job[bool]:
    """Is the API token there and its user active (``turn_store.token_in_force``)?"""
    sent = send(_token_sql(), [token_id, True])
    yield
    return sent.one() is not None


@cache
def _token_sql() -> str:
    user = get_user_model()
    return (
        f"SELECT 1 FROM {table(ApiToken)} t INNER JOIN {table(user)} u "
        f"ON u.{column(user, user._meta.pk.name)} = t.{column(ApiToken, 'user')} "
        f"WHERE t.{column(ApiToken, 'id')} = %s AND u.{column(user, 'is_active')} = %s"
    )


def budget_job(*, user_id: int, run_id: int | None, turn_cost: float) -> Job[str | None]:
    """The owner's budget verdict (``usage_app.services.budget_verdict``) before a model
    call: this run's own calls are in ``turn_cost``, not counted twice."""
    sent = send(*budget_and_spend_statement(user_id=user_id, exclude_run_id=run_id))
    yield
    budget, recorded = budget_and_spend_row(sent.one())
    return budget_verdict(budget=budget, recorded=recorded, turn_cost=turn_cost)
