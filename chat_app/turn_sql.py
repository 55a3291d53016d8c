"""A turn's fixed reads and writes as plain SQL: connect, catch-up, start and finish.

Every socket connect checks ownership and reads the latest run's events; every turn
loads and locks its conversation, opens a run, stores the message, reads the history
and later closes the run. Through the ORM each of those statements cost 150-400 µs of
CPU to build (query compilation, lookups, ordering) against tens of µs to run, and
under 100 simultaneous turns that was the largest fixed item of a turn's CPU
(``bench/profile-turn.txt``). Here the SQL of each shape is built once per process
(:func:`functools.cache`), from the models' own table and column names; values still go
through each field's ``get_db_prep_save`` (and back through ``from_db_value``), so
JSON, UUIDs and datetimes are stored and read exactly as the ORM does it on every
supported backend. Rows come back as model instances (``Model.from_db``), so callers
keep using the models. Same statements, same semantics: only the compilation is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model

from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord, lease_deadline
from chat_app.raw_sql import column, db_value, instance_from_row, python_value, table
from openprogram_site.db_sent import query_sent

__all__ = [
    "conversation_history_rows",
    "conversation_history_rows_sent",
    "conversation_load_sent",
    "message_insert_sent",
    "row_update",
    "run_and_message_keys_sent",
    "run_conversation_todos_set",
    "run_events_rows",
    "run_for_finish_sent",
    "run_insert",
    "run_tool_lists",
    "runs_running_sent",
    "tool_call_status_set",
    "tool_calls_close_open",
]

_M = TypeVar("_M", bound=Model)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    return model._meta.get_field(name)  # type: ignore[return-value]


@cache
def _select_sql(model: type[Model], where: tuple[str, ...], for_update: bool) -> str:
    columns = ", ".join(_q(f.column) for f in model._meta.concrete_fields)
    condition = " AND ".join(f"{column(model, name)} = %s" for name in where)
    lock = " FOR UPDATE" if for_update and connection.features.has_select_for_update else ""
    return f"SELECT {columns} FROM {table(model)} WHERE {condition}{lock}"


def _from_db(model: type[_M], row: Sequence[Any]) -> _M:
    return instance_from_row(model, model._meta.concrete_fields, row)


def conversation_load_sent(
    *, owner_id: int, conversation_id: int, lock: bool
) -> Callable[[], Conversation | None]:
    """Send the SELECT of ``owner_id``'s conversation, every field; the returned function
    reads it (None if there is none). ``lock``: ``FOR UPDATE`` where the database has row
    locks (SQLite's immediate transaction already holds the database). In a pipelined
    block call it after the block."""

    def conversation(cursor: Any) -> Conversation | None:
        row = cursor.fetchone()
        return None if row is None else _from_db(Conversation, row)

    sql = _select_sql(Conversation, ("owner", "id"), lock)
    return query_sent(sql, [owner_id, conversation_id], conversation)


def row_update(model: type[Model], *, pk: int, values: dict[str, Any]) -> None:
    """One UPDATE of the named fields of one row, values as the ORM saves them; nothing
    read back (so it may go out in a pipeline, ``db_batch.statements_pipelined``)."""
    names = tuple(values)
    params = [db_value(model, name, values[name]) for name in names]
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, names), [*params, pk])


@cache
def _update_sql(model: type[Model], names: tuple[str, ...]) -> str:
    assignments = ", ".join(f"{column(model, name)} = %s" for name in names)
    return f"UPDATE {table(model)} SET {assignments} WHERE {column(model, 'id')} = %s"


@cache
def _insert_sql(model: type[Model], keyed: bool = False) -> str:
    """The INSERT of every column but the key, the key returned; ``keyed``: the key is
    the first value given (taken beforehand, :func:`run_and_message_keys_sent`), nothing
    returned."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    if keyed:
        fields.insert(0, model._meta.pk)
    columns = ", ".join(_q(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table(model)} ({columns}) VALUES ({marks})"
    if not keyed and connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {_q(model._meta.pk.column)}"
    return sql


def run_and_message_keys_sent() -> Callable[[], tuple[int, int] | None]:
    """PostgreSQL: send the SELECT that takes the next run key and the next message key
    from their sequences; the returned function reads them. A turn's start that has its
    keys beforehand sends its run, its message and everything that names them in one
    pipeline, without waiting for an INSERT's answer. Other databases: nothing sent, and
    the function gives None (their INSERTs return the key at once, nothing to wait for)."""
    if connection.vendor != "postgresql":
        return lambda: None
    return query_sent(_keys_sql(), [], lambda cursor: tuple(cursor.fetchone()))


@cache
def _keys_sql() -> str:
    def next_key(model: type[Model]) -> str:
        sequence = f"pg_get_serial_sequence('{table(model)}', '{model._meta.pk.column}')"
        return f"nextval({sequence})"

    return f"SELECT {next_key(Run)}, {next_key(Message)}"


_RUN_GIVEN = ("conversation", "model", "profile_name", "attended", "options", "started")
"""A new run's columns that vary per turn; ``lease_until`` too, the rest are defaults."""


def run_insert(
    *,
    conversation_id: int,
    model: str,
    profile_name: str,
    attended: bool,
    options: dict[str, Any],
    started: datetime,
    key: int | None = None,
) -> Run:
    """INSERT a new running run, the row ``Run(...).save()`` stores (every other column
    its field's default, ``lease_until`` a fresh lease), from plain parameters: no model
    instance built and converted field by field before it (a turn start's critical
    path, ``docs/benchmarks.md`` §5a). The returned run has every field set, as after
    ``save()``. ``key``: the run's key, taken beforehand (:func:`run_and_message_keys_sent`):
    nothing is read back, so it may go out in a pipeline."""
    lease_until = lease_deadline()
    given = {
        "conversation": conversation_id,
        "model": model,
        "profile_name": profile_name,
        "attended": attended,
        "options": db_value(Run, "options", options),
        "started": db_value(Run, "started", started),
        "lease_until": db_value(Run, "lease_until", lease_until),
    }
    names, defaults = _run_defaults()
    values = [given[name] if name in given else defaults[name] for name in names]
    with connection.cursor() as cursor:
        if key is None:
            cursor.execute(_insert_sql(Run), values)
            (run_id,) = cursor.fetchone()
        else:
            cursor.execute(_insert_sql(Run, keyed=True), [key, *values])
            run_id = key
    python = {
        "id": run_id,
        "conversation": conversation_id,
        "model": model,
        "profile_name": profile_name,
        "attended": attended,
        "options": options,
        "started": started,
        "lease_until": lease_until,
    }
    return _instance(Run, python)


@cache
def _run_defaults() -> tuple[tuple[str, ...], dict[str, Any]]:
    """The INSERT's field names in column order, and the stored form of each default
    (constants: a status, empty text, empty JSON lists and objects, no end)."""
    fields = [f for f in Run._meta.concrete_fields if not f.primary_key]
    defaults = {
        f.name: f.get_db_prep_save(f.get_default(), connection)
        for f in fields
        if f.name not in _RUN_GIVEN and f.name != "lease_until"
    }
    return tuple(f.name for f in fields), defaults


def _instance(model: type[_M], values: dict[str, Any]) -> _M:
    """A stored row's instance from python values by field name (defaults for the rest)."""
    fields = model._meta.concrete_fields
    row = [values[f.name] if f.name in values else f.get_default() for f in fields]
    return model.from_db(connection.alias, [f.attname for f in fields], row)


def message_insert_sent(
    cursor: Any,
    *,
    conversation_id: int,
    run_id: int | None,
    role: str,
    text: str,
    created: datetime,
    key: int | None = None,
) -> Callable[[], Message]:
    """Send a message's INSERT on ``cursor`` from plain parameters (the row
    ``Message(...).save()`` stores); the returned function reads its key and gives the
    stored message. In a pipelined block (``db_batch.statements_pipelined``) call it
    after the block: the key comes with the block's one round trip. ``key``: the key,
    taken beforehand (:func:`run_and_message_keys_sent`): nothing is read back, and the
    function may be called at once."""
    values = {
        "conversation": conversation_id,
        "role": role,
        "text": text,
        "run": run_id,
        "created": db_value(Message, "created", created),
    }
    names = tuple(f.name for f in Message._meta.concrete_fields if not f.primary_key)
    if key is None:
        cursor.execute(_insert_sql(Message), [values[name] for name in names])
    else:
        cursor.execute(_insert_sql(Message, keyed=True), [key, *(values[n] for n in names)])

    def stored() -> Message:
        (message_id,) = cursor.fetchone() if key is None else (key,)
        return _instance(
            Message,
            {
                "id": message_id,
                "conversation": conversation_id,
                "role": role,
                "text": text,
                "run": run_id,
                "created": created,
            },
        )

    return stored


def runs_running_sent(*, conversation_id: int) -> Callable[[], list[tuple[int, Any]]]:
    """Send the SELECT of the conversation's runs still marked running; the returned
    function reads their ``(id, lease_until)`` (in a pipelined block: after it)."""
    lease = _field(Run, "lease_until")

    def running(cursor: Any) -> list[tuple[int, Any]]:
        return [(pk, python_value(lease, until)) for pk, until in cursor.fetchall()]

    return query_sent(_running_sql(), [conversation_id, "running"], running)


@cache
def _running_sql() -> str:
    return (
        f"SELECT {column(Run, 'id')}, {column(Run, 'lease_until')} "
        f"FROM {table(Run)} "
        f"WHERE {column(Run, 'conversation')} = %s AND {column(Run, 'status')} = %s"
    )


def conversation_history_rows(*, conversation_id: int, before: Message) -> list[tuple[str, str]]:
    """``(role, text)`` of the conversation's messages up to ``before`` (left out),
    oldest first, leaving out those of runs replaced by an edit or a regeneration."""
    with connection.cursor() as cursor:
        return conversation_history_rows_sent(
            cursor, conversation_id=conversation_id, before=before
        )()


def conversation_history_rows_sent(
    cursor: Any, *, conversation_id: int, before: Message
) -> Callable[[], list[tuple[str, str]]]:
    """Send :func:`conversation_history_rows`' SELECT on ``cursor``; the returned function
    reads the rows (in a pipelined block: after it, with the block's one round trip)."""
    created = db_value(Message, "created", before.created)
    cursor.execute(_history_sql(), [conversation_id, created, before.pk, True])
    return lambda: [(role, text) for role, text in cursor.fetchall()]


@cache
def _history_sql() -> str:
    m, r = table(Message), table(Run)
    created, mid = column(Message, "created"), column(Message, "id")
    return (
        f"SELECT {m}.{column(Message, 'role')}, {m}.{column(Message, 'text')} FROM {m} "
        f"LEFT OUTER JOIN {r} ON {m}.{column(Message, 'run')} = {r}.{column(Run, 'id')} "
        f"WHERE {m}.{column(Message, 'conversation')} = %s "
        f"AND {m}.{created} <= %s "
        f"AND {m}.{mid} <> %s "
        f"AND NOT ({r}.{column(Run, 'superseded')} = %s "
        f"AND {r}.{column(Run, 'superseded')} IS NOT NULL) "
        f"ORDER BY {m}.{created} ASC, {m}.{mid} ASC"
    )


def run_events_rows(*, run_id: int, after_seq: int) -> list[tuple[int, str, Any]]:
    """``(seq, type, payload)`` of the run's events after ``after_seq``, in order."""
    payload = _field(RunEvent, "payload")
    with connection.cursor() as cursor:
        cursor.execute(_events_sql(), [run_id, after_seq])
        rows = cursor.fetchall()
    return [(seq, kind, python_value(payload, value)) for seq, kind, value in rows]


@cache
def _events_sql() -> str:
    seq = column(RunEvent, "seq")
    return (
        f"SELECT {seq}, {column(RunEvent, 'type')}, {column(RunEvent, 'payload')} "
        f"FROM {table(RunEvent)} "
        f"WHERE {column(RunEvent, 'run')} = %s AND {seq} > %s ORDER BY {seq}"
    )


def run_tool_lists(*, run_id: int) -> dict[str, Any]:
    """The run's resolved ``tools``, ``deferred`` and compact ``explain`` (the
    ``tools_resolved`` event's lists, kept on the run rather than in the event row)."""
    names = ("tools", "deferred", "explain")
    with connection.cursor() as cursor:
        cursor.execute(_tool_lists_sql(), [run_id])
        row = cursor.fetchone()
    if row is None:
        return {}
    return {
        name: python_value(_field(Run, name), value) for name, value in zip(names, row, strict=True)
    }


@cache
def _tool_lists_sql() -> str:
    columns = ", ".join(column(Run, name) for name in ("tools", "deferred", "explain"))
    return f"SELECT {columns} FROM {table(Run)} WHERE {column(Run, 'id')} = %s"


_FINISH_FIELDS = ("id", "conversation", "status", "text", "error")


def run_for_finish_sent(*, run_id: int) -> Callable[[], Run | None]:
    """Send the SELECT of the run's few fields closing it reads, locked (``FOR UPDATE``
    where rows lock); the returned function reads the run (None if there is none). In a
    pipelined block call it after the block (``run_lifecycle.run_finish_sent``)."""

    def run(cursor: Any) -> Run | None:
        row = cursor.fetchone()
        fields = [_field(Run, name) for name in _FINISH_FIELDS]
        return None if row is None else instance_from_row(Run, fields, row)

    return query_sent(_for_finish_sql(), [run_id], run)


@cache
def _for_finish_sql() -> str:
    columns = ", ".join(column(Run, name) for name in _FINISH_FIELDS)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return f"SELECT {columns} FROM {table(Run)} WHERE {column(Run, 'id')} = %s{lock}"


def tool_calls_close_open(*, run_id: int, status: str, preview: str) -> None:
    """Close the run's calls still running or awaiting approval as errors with ``status``."""
    with connection.cursor() as cursor:
        cursor.execute(
            _close_open_sql(),
            [status, True, preview, run_id, "running", "awaiting_approval"],
        )


@cache
def _close_open_sql() -> str:
    c = ToolCallRecord
    return (
        f"UPDATE {table(c)} SET {column(c, 'status')} = %s, "
        f"{column(c, 'is_error')} = %s, {column(c, 'result_preview')} = %s "
        f"WHERE {column(c, 'run')} = %s AND {column(c, 'status')} IN (%s, %s)"
    )


def tool_call_status_set(*, run_id: int, call_id: str, status: str) -> None:
    """Set one call's status (approval asked or answered); nothing read back."""
    with connection.cursor() as cursor:
        cursor.execute(_call_status_sql(), [status, run_id, call_id])


@cache
def _call_status_sql() -> str:
    c = ToolCallRecord
    return (
        f"UPDATE {table(c)} SET {column(c, 'status')} = %s "
        f"WHERE {column(c, 'run')} = %s AND {column(c, 'call_id')} = %s"
    )


def run_conversation_todos_set(*, run_id: int, todos: Any) -> None:
    """Store the todo list on the conversation of run ``run_id``; nothing read back."""
    with connection.cursor() as cursor:
        cursor.execute(_todos_sql(), [db_value(Conversation, "todos", todos), run_id])


@cache
def _todos_sql() -> str:
    return (
        f"UPDATE {table(Conversation)} SET {column(Conversation, 'todos')} = %s "
        f"WHERE {column(Conversation, 'id')} = (SELECT {column(Run, 'conversation')} "
        f"FROM {table(Run)} WHERE {column(Run, 'id')} = %s)"
    )
