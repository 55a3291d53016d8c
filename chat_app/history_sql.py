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
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from chat_app.models import RunEvent, ToolCallRecord

__all__ = ["run_events_insert", "tool_call_close", "tool_call_open"]

_CALL_RESULT = ("result_preview", "is_error", "truncated", "full_result_path", "duration_ms")


def _prep(model: type[Model], name: str, value: Any) -> Any:
    return model._meta.get_field(name).get_db_prep_save(value, connection)


@cache
def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _insert_sql(model: type[Model], names: Iterable[str]) -> str:
    names = list(names)
    columns = ", ".join(_column(model, name) for name in names)
    marks = ", ".join(["%s"] * len(names))
    return f"INSERT INTO {_table(model)} ({columns}) VALUES ({marks})"


def run_events_insert(*, run_id: int, events: list[tuple[int, str, dict[str, Any]]]) -> None:
    """Append ``(seq, type, payload)`` rows to run ``run_id``'s history."""
    names = ("run", "seq", "type", "payload", "created")
    now = _prep(RunEvent, "created", timezone.now())
    rows = [
        (run_id, seq, kind, _prep(RunEvent, "payload", payload), now)
        for seq, kind, payload in events
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_insert_sql(RunEvent, names), rows)


def tool_call_open(
    *, run_id: int, call_id: str, name: str, arguments: Any, parent_call_id: str
) -> None:
    """The call's row, running; a call announced again (a nested run) keeps its row and
    takes the new name, arguments and parent."""
    values = {
        "run": run_id,
        "call_id": call_id,
        "name": name,
        "arguments": _prep(ToolCallRecord, "arguments", arguments),
        "status": "running",
        "result_preview": "",
        "is_error": False,
        "truncated": False,
        "full_result_path": "",
        "duration_ms": 0.0,
        "parent_call_id": parent_call_id,
        "created": _prep(ToolCallRecord, "created", timezone.now()),
    }
    updated = ", ".join(
        f"{_column(ToolCallRecord, n)} = EXCLUDED.{_column(ToolCallRecord, n)}"
        for n in ("name", "arguments", "parent_call_id")
    )
    conflict = f"{_column(ToolCallRecord, 'run')}, {_column(ToolCallRecord, 'call_id')}"
    sql = f"{_insert_sql(ToolCallRecord, values)} ON CONFLICT ({conflict}) DO UPDATE SET {updated}"
    with connection.cursor() as cursor:
        cursor.execute(sql, list(values.values()))


def tool_call_close(*, run_id: int, call_id: str, status: str, result: dict[str, Any]) -> int:
    """Store a call's result and ``status`` (a denied call stays denied); rows changed."""
    status_column = _column(ToolCallRecord, "status")
    sets = ", ".join(f"{_column(ToolCallRecord, n)} = %s" for n in _CALL_RESULT)
    sql = (
        f"UPDATE {_table(ToolCallRecord)} SET {sets}, {status_column} = CASE"
        f" WHEN {status_column} = %s THEN %s ELSE %s END"
        f" WHERE {_column(ToolCallRecord, 'run')} = %s"
        f" AND {_column(ToolCallRecord, 'call_id')} = %s"
    )
    params = [_prep(ToolCallRecord, n, result[n]) for n in _CALL_RESULT]
    params += ["denied", "denied", status, run_id, call_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
