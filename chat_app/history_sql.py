"""Run history's per-event writes as plain SQL: the few statements every turn repeats.

A 3-tool turn stores its events in about five steps and opens and closes a row per
tool call. Through the ORM each of those statements cost 100-400 µs of CPU to build
(query compilation, model instances, per-field preparation): about ten times the
write itself, and under 100 simultaneous turns a large share of the server's CPU per
turn (``bench/profile-turn.txt``). These fixed-shape statements are written once here.
Values still go through each field's own ``get_db_prep_save``, so JSON and datetimes
are encoded exactly as the ORM encodes them on every supported backend; table and
column names come from the models. ``INSERT … ON CONFLICT … DO UPDATE`` is what
``bulk_create(update_conflicts=True)`` emits on SQLite and PostgreSQL alike.
Everything else stays on the ORM.

On PostgreSQL every statement is a network round trip, and the batch's thread waits
for each answer (then for the GIL) while 100 turns queue behind it. None of these
writes is read back, so a step's statements go out together
(``chat_app.db_batch.statements_pipelined``, psycopg's pipeline mode): one round trip
for a whole step of a turn's history, a step's event rows in one multi-row INSERT.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from chat_app.models import Message, RunEvent, ToolCallRecord
from chat_app.raw_sql import column, db_value, table
from usage_app.models import ModelCall

__all__ = [
    "assistant_message_insert",
    "ledger_rollback",
    "ledger_savepoint",
    "model_calls_insert",
    "run_events_insert",
    "tool_call_close",
    "tool_call_open",
]

_ROWS_PER_INSERT = 100
"""Rows per multi-row INSERT: at most 1,000 parameters, far below SQLite's and PostgreSQL's
limits."""
_ledger_savepoints = itertools.count()


_CALL_RESULT = ("result_preview", "is_error", "truncated", "full_result_path", "duration_ms")


def _insert_sql(model: type[Model], names: Iterable[str]) -> str:
    names = list(names)
    columns = ", ".join(column(model, name) for name in names)
    marks = ", ".join(["%s"] * len(names))
    return f"INSERT INTO {table(model)} ({columns}) VALUES ({marks})"


def _rows_insert(model: type[Model], names: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """``rows`` in multi-row INSERTs: one statement (one parse, one round trip) for a
    step's rows rather than one each."""
    with connection.cursor() as cursor:
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            values = ", ".join([f"({', '.join(['%s'] * len(names))})"] * len(chunk))
            columns = ", ".join(column(model, name) for name in names)
            cursor.execute(
                f"INSERT INTO {table(model)} ({columns}) VALUES {values}",
                [value for row in chunk for value in row],
            )


def run_events_insert(*, run_id: int, events: list[tuple[int, str, dict[str, Any]]]) -> None:
    """Append ``(seq, type, payload)`` rows to run ``run_id``'s history."""
    now = db_value(RunEvent, "created", timezone.now())
    rows = [
        (run_id, seq, kind, db_value(RunEvent, "payload", payload), now)
        for seq, kind, payload in events
    ]
    _rows_insert(RunEvent, ("run", "seq", "type", "payload", "created"), rows)


_LEDGER = (
    "user",
    "run",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "price_known",
    "estimated",
    "created",
)


def ledger_savepoint() -> str:
    """A savepoint name no other step of this process uses (see :func:`model_calls_insert`)."""
    return connection.ops.quote_name(f"ledger_{next(_ledger_savepoints)}")


def model_calls_insert(
    *, user_id: int, run_id: int, calls: list[dict[str, Any]], savepoint: str
) -> None:
    """Ledger rows (``usage_app.services.model_call_fields``) for a step's model calls,
    under ``savepoint``: if the database refuses them, :func:`ledger_rollback` takes
    back just these rows (pipelined on PostgreSQL, the savepoint costs no round trip)."""
    now = db_value(ModelCall, "created", timezone.now())
    rows = [
        (user_id, run_id, *(db_value(ModelCall, n, call[n]) for n in _LEDGER[2:-1]), now)
        for call in calls
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"SAVEPOINT {savepoint}")
    _rows_insert(ModelCall, _LEDGER, rows)
    with connection.cursor() as cursor:
        cursor.execute(f"RELEASE SAVEPOINT {savepoint}")


def ledger_rollback(savepoint: str) -> bool:
    """After a step's write failed: True if the failure was the ledger's own rows (the
    savepoint was set, so every statement before it had succeeded), now taken back;
    False if the savepoint was never reached (history failed: the step must fail)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"ROLLBACK TO SAVEPOINT {savepoint}")
            cursor.execute(f"RELEASE SAVEPOINT {savepoint}")
    except Exception:
        return False
    return True


def tool_call_open(
    *, run_id: int, call_id: str, name: str, arguments: Any, parent_call_id: str
) -> None:
    """The call's row, running; a call announced again (a nested run) keeps its row and
    takes the new name, arguments and parent."""
    values = {
        "run": run_id,
        "call_id": call_id,
        "name": name,
        "arguments": db_value(ToolCallRecord, "arguments", arguments),
        "status": "running",
        "result_preview": "",
        "is_error": False,
        "truncated": False,
        "full_result_path": "",
        "duration_ms": 0.0,
        "parent_call_id": parent_call_id,
        "created": db_value(ToolCallRecord, "created", timezone.now()),
    }
    updated = ", ".join(
        f"{column(ToolCallRecord, n)} = EXCLUDED.{column(ToolCallRecord, n)}"
        for n in ("name", "arguments", "parent_call_id")
    )
    conflict = f"{column(ToolCallRecord, 'run')}, {column(ToolCallRecord, 'call_id')}"
    sql = f"{_insert_sql(ToolCallRecord, values)} ON CONFLICT ({conflict}) DO UPDATE SET {updated}"
    with connection.cursor() as cursor:
        cursor.execute(sql, list(values.values()))


def tool_call_close(
    *, run_id: int, call_id: str, name: str, status: str, result: dict[str, Any]
) -> None:
    """Store a call's result and ``status`` (a denied call stays denied). One upsert,
    so nothing is read back: a call never announced (one the framework refused before
    starting it) gets its row here, named ``name``."""
    values = {
        "run": run_id,
        "call_id": call_id,
        "name": name,
        "arguments": db_value(ToolCallRecord, "arguments", {}),
        "status": status,
        **{n: db_value(ToolCallRecord, n, result[n]) for n in _CALL_RESULT},
        "parent_call_id": "",
        "created": db_value(ToolCallRecord, "created", timezone.now()),
    }
    calls, status_column = table(ToolCallRecord), column(ToolCallRecord, "status")
    updated = ", ".join(
        f"{column(ToolCallRecord, n)} = EXCLUDED.{column(ToolCallRecord, n)}" for n in _CALL_RESULT
    )
    conflict = f"{column(ToolCallRecord, 'run')}, {column(ToolCallRecord, 'call_id')}"
    sql = (
        f"{_insert_sql(ToolCallRecord, values)} ON CONFLICT ({conflict}) DO UPDATE SET {updated},"
        f" {status_column} = CASE WHEN {calls}.{status_column} = %s THEN %s"
        f" ELSE EXCLUDED.{status_column} END"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values.values(), "denied", "denied"])


def assistant_message_insert(
    cursor: Any, *, conversation_id: int, run_id: int, text: str, created: Any
) -> Callable[[], Message]:
    """Send the INSERT of a run's reply on ``cursor``; the returned function reads its
    id and gives the stored Message. In a pipelined block call it after the block:
    the row's id comes with the block's one round trip, not a round trip of its own."""
    values = {
        "conversation": conversation_id,
        "role": "assistant",
        "text": text,
        "run": run_id,
        "created": db_value(Message, "created", created),
    }
    pk = connection.ops.quote_name(Message._meta.pk.column)
    cursor.execute(f"{_insert_sql(Message, values)} RETURNING {pk}", list(values.values()))

    def stored() -> Message:
        (message_id,) = cursor.fetchone()
        return Message(
            pk=message_id,
            conversation_id=conversation_id,
            role="assistant",
            text=text,
            run_id=run_id,
            created=created,
        )

    return stored
