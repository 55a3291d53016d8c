"""The turn store's writes of run history: a step's events, and a run's end.

Every event a turn emits is appended (each with its ``seq``), and the rows that
summarise it (the run's resolved tools, a tool call's status and result, the
conversation's todos) are kept in step, with a ledger row per model call: one sending
step, so on PostgreSQL a whole batch of turns' steps is one round trip. A step in which
tool calls finished also writes their audit trail rows (``audit_app``), after one read.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit_app.models import AuditEvent
from audit_app.recording import audit_events
from chat_app.explain import explain_compact
from chat_app.models import Conversation, Message, Run, RunEvent, RunStatus, ToolCallRecord
from chat_app.turn_store._batch import Job, run_alone, send
from core.model_sql import (
    column,
    db_value,
    insert_returning,
    insert_values,
    instance_from_row,
    instance_stored,
    key_read,
    table,
    update_row,
    update_sql,
)
from usage_app.models import ModelCall
from usage_app.services import model_call_fields

__all__ = ["finish_job", "record_job", "run_close"]

_log = logging.getLogger("chat_app.turn_store")

_ON_THE_RUN = ("tools", "deferred", "explain")
"""tools_resolved fields the Run itself stores; the event row would only repeat them."""
_CALL_RESULT = ("result_preview", "is_error", "truncated", "full_result_path", "duration_ms")
_CALL_ANNOUNCED = ("name", "arguments", "parent_call_id")


def record_job(
    *,
    run_id: int,
    owner_id: int | None,
    events: list[dict[str, Any]],
    audited: list[dict[str, Any]] | None = None,
) -> Job[None]:
    """Append events (each carrying its ``seq``) to run history; one sending step.

    ``owner_id``: also a ledger row (``usage_app.models.ModelCall``) for each
    ``model_call`` event, under a savepoint of its own: the ledger must not take the
    turn's history down (the run keeps the totals), so rows the database refuses are
    logged and left out.

    ``audited``: the facts of the calls that finished in this step
    (``audit_app.recording.audit_calls_finished``); their audit trail rows need the
    owner's username and the run's conversation, read in the same job (two more steps,
    only in a step where a call finished), and go out with the next sending step.
    """
    if events:
        insert_values(
            RunEvent,
            [
                {"run_id": run_id, "seq": e["seq"], "type": e["type"], "payload": _event_payload(e)}
                for e in events
            ],
        )
        for event in events:
            _apply_event(run_id, event)
        calls = [
            {"user_id": owner_id, "run_id": run_id, **model_call_fields(e)}
            for e in events
            if e["type"] == "model_call"
        ]
        if calls and owner_id is not None:
            try:
                with transaction.atomic():
                    insert_values(ModelCall, calls)
            except DatabaseError:
                _log.exception("could not record the model calls of run %r", run_id)
    if not audited:
        return
    whose = send(_run_owner_sql(), [owner_id, run_id])
    yield
    row = whose.one()
    if row is None:  # the run is gone: nothing to file its calls under
        return
    username, conversation_id = row
    yield
    insert_values(
        AuditEvent,
        audit_events(
            facts=audited,
            run_id=run_id,
            user_id=owner_id,
            username=username or "",
            conversation_id=conversation_id,
        ),
    )


@cache
def _run_owner_sql() -> str:
    """The owner's username (NULL when the user is gone) and the run's conversation;
    parameters: the owner's key, the run's key."""
    user = get_user_model()
    username = column(user, user.USERNAME_FIELD)
    return (
        f"SELECT u.{username}, r.{column(Run, 'conversation')} FROM {table(Run)} r "
        f"LEFT JOIN {table(user)} u ON u.{column(user, user._meta.pk.name)} = %s "
        f"WHERE r.{column(Run, 'id')} = %s"
    )


def _event_payload(event: dict[str, Any]) -> dict[str, Any]:
    dropped = {"seq", "type", "run_id"}
    if event["type"] == "tools_resolved":
        dropped.update(_ON_THE_RUN)
    return {k: v for k, v in event.items() if k not in dropped}


def _apply_event(run_id: int, event: dict[str, Any]) -> None:
    """Keep the run's summary and tool-call rows in step with one event, by run id,
    without loading the run: most events touch only their own rows."""
    kind = event["type"]
    if kind == "tools_resolved":
        tools, deferred = event.get("tools", []), event.get("deferred", [])
        summary: dict[str, Any] = {
            "tools": tools,
            "deferred": deferred,
            "explain": explain_compact(event.get("explain", []), tools=tools, deferred=deferred),
            "warnings": event.get("warnings", []),
        }
        if event.get("model"):
            summary["model"] = event["model"]
        update_row(Run, pk=run_id, values=summary)
    elif kind == "tool_call_started":
        arguments = event.get("arguments")
        # The same call may be announced again (a nested run): it keeps its one row.
        call = {
            "run_id": run_id,
            "call_id": event["call_id"],
            "name": event["name"],
            "arguments": arguments if arguments is not None else {},
            "parent_call_id": event.get("parent_call_id") or "",
        }
        insert_values(ToolCallRecord, [call], suffix=_upsert_sql(_CALL_ANNOUNCED))
    elif kind == "approval_requested":
        _call_status_set(run_id, event["call_id"], "awaiting_approval")
    elif kind == "approval_resolved":
        _call_status_set(run_id, event["call_id"], "running" if event.get("approved") else "denied")
    elif kind == "tool_finished":
        _tool_call_finish(run_id, event)
    elif kind == "todo_updated":
        todos = db_value(Conversation, "todos", event.get("todos", []))
        with connection.cursor() as cursor:
            cursor.execute(_todos_sql(), [todos, run_id])
    elif kind == "error":
        update_row(Run, pk=run_id, values={"error": event.get("message", "")})


def _call_status_set(run_id: int, call_id: str, status: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            update_sql(ToolCallRecord, ("status",), ("run", "call_id")), [status, run_id, call_id]
        )


def _tool_call_finish(run_id: int, event: dict[str, Any]) -> None:
    """Close a call's row with its result in one upsert; a denied call stays denied, and
    a call never announced (refused before it started) gets its row here."""
    is_error = bool(event.get("is_error"))
    # Cut off by Stop: shown as stopped, not as a failure of the tool.
    status = "stopped" if event.get("stopped") else "error" if is_error else "done"
    call = {
        "run_id": run_id,
        "call_id": event["call_id"],
        "name": event.get("name", ""),
        "status": status,
        "result_preview": event.get("preview", ""),
        "is_error": is_error,
        "truncated": bool(event.get("truncated")),
        "full_result_path": event.get("full_result_path") or "",
        "duration_ms": float(event.get("duration_ms") or 0.0),
    }
    status_column = column(ToolCallRecord, "status")
    keep_denied = (
        f", {status_column} = CASE WHEN {table(ToolCallRecord)}.{status_column} = %s"
        f" THEN %s ELSE EXCLUDED.{status_column} END"
    )
    insert_values(
        ToolCallRecord,
        [call],
        suffix=_upsert_sql(_CALL_RESULT) + keep_denied,
        params=["denied", "denied"],
    )


@cache
def _upsert_sql(updated: tuple[str, ...]) -> str:
    """ToolCallRecord's conflict clause: a call's row is unique per run and call id."""
    conflict = f"{column(ToolCallRecord, 'run')}, {column(ToolCallRecord, 'call_id')}"
    assignments = ", ".join(
        f"{column(ToolCallRecord, n)} = EXCLUDED.{column(ToolCallRecord, n)}" for n in updated
    )
    return f" ON CONFLICT ({conflict}) DO UPDATE SET {assignments}"


@cache
def _todos_sql() -> str:
    return (
        f"UPDATE {table(Conversation)} SET {column(Conversation, 'todos')} = %s "
        f"WHERE {column(Conversation, 'id')} = (SELECT {column(Run, 'conversation')} "
        f"FROM {table(Run)} WHERE {column(Run, 'id')} = %s)"
    )


_FINISH_FIELDS = ("id", "conversation", "status", "text", "error")
"""What closing a run reads of it (its JSON fields cost to decode)."""


@cache
def _for_finish_sql() -> str:
    columns = ", ".join(column(Run, name) for name in _FINISH_FIELDS)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return f"SELECT {columns} FROM {table(Run)} WHERE {column(Run, 'id')} = %s{lock}"


@cache
def _close_open_calls_sql() -> str:
    c = ToolCallRecord
    return (
        f"UPDATE {table(c)} SET {column(c, 'status')} = %s, "
        f"{column(c, 'is_error')} = %s, {column(c, 'result_preview')} = %s "
        f"WHERE {column(c, 'run')} = %s AND {column(c, 'status')} IN (%s, %s)"
    )


def finish_job(
    *,
    run_id: int,
    status: RunStatus,
    text: str,
    usage: dict[str, Any] | None = None,
    error: str = "",
) -> Job[Message]:
    """Close a run and store the assistant's (possibly partial) reply; the reply, with
    ``message.run`` the run as it stands.

    A run already closed stays as it was (a turn that lost its lease and was closed as
    orphaned by another process must not reopen it): its reply is returned instead.
    """
    locked = send(_for_finish_sql(), [run_id])
    yield
    row = locked.one()
    if row is None:
        raise Run.DoesNotExist(f"run {run_id!r} does not exist")
    run = instance_from_row(Run, [Run._meta.get_field(name) for name in _FINISH_FIELDS], row)
    if run.status != "running":
        return _reply_that_stands(run)
    yield
    now = timezone.now()
    closed: dict[str, Any] = {"status": status, "text": text, "usage": usage or {}, "finished": now}
    if error:
        closed["error"] = error
    update_row(Run, pk=run_id, values={**closed, "lease_until": None})
    with connection.cursor() as cursor:
        # Calls still open when the turn ended (stopped, errored) are closed with it.
        call_status = "stopped" if status == "stopped" else "error"
        cursor.execute(
            _close_open_calls_sql(),
            [call_status, True, f"turn {status}", run_id, "running", "awaiting_approval"],
        )
    update_row(Conversation, pk=run.conversation_id, values={"updated": now})
    written = {
        "conversation_id": run.conversation_id,
        "role": "assistant",
        "text": text,
        "run_id": run_id,
        "created": now,
    }
    reply = connection.cursor()
    try:
        key = insert_returning(reply, Message, written)
        yield
        if key is None:
            key = key_read(reply, Message)
    finally:
        reply.close()
    message = instance_stored(Message, {"id": key, **written})
    message.run = run
    for name, value in closed.items():
        setattr(run, name, value)
    run.lease_until = None
    return message


def _reply_that_stands(run: Run) -> Message:
    closed = run.messages.filter(role="assistant").order_by("-id").first()
    if closed is not None:
        closed.run = run  # callers read the verdict that stands from message.run
        return closed
    return Message.objects.create(
        conversation_id=run.conversation_id, role="assistant", text=run.text, run=run
    )


def run_close(
    *,
    run_id: int,
    status: RunStatus,
    text: str,
    usage: dict[str, Any] | None = None,
    error: str = "",
) -> Message:
    """:func:`finish_job` here and now, in the caller's transaction if any (no savepoint:
    inside a batch's reading step, whatever it raises fails the batch as a whole)."""
    with transaction.atomic(savepoint=False):
        return run_alone(
            finish_job(run_id=run_id, status=status, text=text, usage=usage, error=error)
        )
