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

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar
from uuid import UUID

from django.db import connection
from django.db.models import Field, Model

from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord

__all__ = [
    "conversation_history_rows",
    "conversation_load",
    "conversation_owned_id",
    "row_insert",
    "row_update",
    "run_conversation_todos_set",
    "run_events_rows",
    "run_for_finish",
    "run_latest_status",
    "run_tool_lists",
    "runs_running",
    "tool_call_status_set",
    "tool_calls_close_open",
]

_M = TypeVar("_M", bound=Model)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    return model._meta.get_field(name)  # type: ignore[return-value]


@cache
def _column(model: type[Model], name: str) -> str:
    return _q(_field(model, name).column)


@cache
def _select_sql(model: type[Model], where: tuple[str, ...], for_update: bool) -> str:
    columns = ", ".join(_q(f.column) for f in model._meta.concrete_fields)
    condition = " AND ".join(f"{_column(model, name)} = %s" for name in where)
    lock = " FOR UPDATE" if for_update and connection.features.has_select_for_update else ""
    return f"SELECT {columns} FROM {_q(model._meta.db_table)} WHERE {condition}{lock}"


def _prep(model: type[Model], name: str, value: Any) -> Any:
    return _field(model, name).get_db_prep_save(value, connection)


def _from_db(model: type[_M], row: Sequence[Any]) -> _M:
    fields = model._meta.concrete_fields
    values = [_convert(field, value) for field, value in zip(fields, row, strict=True)]
    return model.from_db(connection.alias, [f.attname for f in fields], values)


def conversation_owned_id(*, owner_id: int, public_id: str | UUID) -> int | None:
    """The key of the conversation ``public_id`` if ``owner_id`` owns it, else None.

    A malformed id is simply not found (as ``selectors.conversation_by_public_id``)."""
    try:
        key = public_id if isinstance(public_id, UUID) else UUID(str(public_id))
    except ValueError:
        return None
    sql = _owned_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, [owner_id, _prep(Conversation, "public_id", key)])
        row = cursor.fetchone()
    return None if row is None else row[0]


@cache
def _owned_sql() -> str:
    return (
        f"SELECT {_column(Conversation, 'id')} FROM {_q(Conversation._meta.db_table)} "
        f"WHERE {_column(Conversation, 'owner')} = %s AND {_column(Conversation, 'public_id')} = %s"
    )


def conversation_load(*, owner_id: int, conversation_id: int, lock: bool) -> Conversation | None:
    """``owner_id``'s conversation, every field loaded; ``lock``: ``FOR UPDATE`` where the
    database has row locks (SQLite's immediate transaction already holds the database)."""
    sql = _select_sql(Conversation, ("owner", "id"), lock)
    with connection.cursor() as cursor:
        cursor.execute(sql, [owner_id, conversation_id])
        row = cursor.fetchone()
    return None if row is None else _from_db(Conversation, row)


def row_update(model: type[Model], *, pk: int, values: dict[str, Any]) -> None:
    """One UPDATE of the named fields of one row, values as the ORM saves them; nothing
    read back (so it may go out in a pipeline, ``db_batch.statements_pipelined``)."""
    names = tuple(values)
    params = [_prep(model, name, values[name]) for name in names]
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, names), [*params, pk])


@cache
def _update_sql(model: type[Model], names: tuple[str, ...]) -> str:
    assignments = ", ".join(f"{_column(model, name)} = %s" for name in names)
    return f"UPDATE {_q(model._meta.db_table)} SET {assignments} WHERE {_column(model, 'id')} = %s"


def row_insert(obj: _M) -> _M:
    """INSERT a new model instance (defaults and ``auto_now_add`` applied as ``save()``
    applies them) and set its primary key; no signals, as ``bulk_create``."""
    model = type(obj)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model), values)
        if connection.features.can_return_columns_from_insert:
            (pk,) = cursor.fetchone()
        else:  # pragma: no cover - every supported backend returns columns
            pk = connection.ops.last_insert_id(cursor, model._meta.db_table, model._meta.pk.column)
    obj.pk = pk
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj


@cache
def _insert_sql(model: type[Model]) -> str:
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(_q(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {_q(model._meta.db_table)} ({columns}) VALUES ({marks})"
    if connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {_q(model._meta.pk.column)}"
    return sql


def runs_running(*, conversation_id: int) -> list[tuple[int, Any]]:
    """``(id, lease_until)`` of the conversation's runs still marked running."""
    lease = _field(Run, "lease_until")
    with connection.cursor() as cursor:
        cursor.execute(_running_sql(), [conversation_id, "running"])
        rows = cursor.fetchall()
    return [(pk, _convert(lease, until)) for pk, until in rows]


@cache
def _running_sql() -> str:
    return (
        f"SELECT {_column(Run, 'id')}, {_column(Run, 'lease_until')} "
        f"FROM {_q(Run._meta.db_table)} "
        f"WHERE {_column(Run, 'conversation')} = %s AND {_column(Run, 'status')} = %s"
    )


def _convert(field: Field[Any, Any], value: Any) -> Any:
    """A column's value as the ORM returns it (the backend's and the field's converters)."""
    for convert in _converters(field):
        value = convert(value, field, connection)
    return value


@cache
def _converters(field: Field[Any, Any]) -> tuple[Any, ...]:
    backend = connection.ops.get_db_converters(field.cached_col)
    return (*backend, *field.get_db_converters(connection))


def conversation_history_rows(*, conversation_id: int, before: Message) -> list[tuple[str, str]]:
    """``(role, text)`` of the conversation's messages up to ``before`` (left out),
    oldest first, leaving out those of runs replaced by an edit or a regeneration."""
    created = _prep(Message, "created", before.created)
    with connection.cursor() as cursor:
        cursor.execute(_history_sql(), [conversation_id, created, before.pk, True])
        return [(role, text) for role, text in cursor.fetchall()]


@cache
def _history_sql() -> str:
    m, r = _q(Message._meta.db_table), _q(Run._meta.db_table)
    created, mid = _column(Message, "created"), _column(Message, "id")
    return (
        f"SELECT {m}.{_column(Message, 'role')}, {m}.{_column(Message, 'text')} FROM {m} "
        f"LEFT OUTER JOIN {r} ON {m}.{_column(Message, 'run')} = {r}.{_column(Run, 'id')} "
        f"WHERE {m}.{_column(Message, 'conversation')} = %s "
        f"AND {m}.{created} <= %s "
        f"AND {m}.{mid} <> %s "
        f"AND NOT ({r}.{_column(Run, 'superseded')} = %s "
        f"AND {r}.{_column(Run, 'superseded')} IS NOT NULL) "
        f"ORDER BY {m}.{created} ASC, {m}.{mid} ASC"
    )


def run_latest_status(*, conversation_id: int) -> tuple[int, str] | None:
    """``(id, status)`` of the conversation's latest run (``selectors.run_latest``'s order)."""
    with connection.cursor() as cursor:
        cursor.execute(_latest_sql(), [conversation_id])
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


@cache
def _latest_sql() -> str:
    started, rid = _column(Run, "started"), _column(Run, "id")
    return (
        f"SELECT {rid}, {_column(Run, 'status')} FROM {_q(Run._meta.db_table)} "
        f"WHERE {_column(Run, 'conversation')} = %s ORDER BY {started} DESC, {rid} DESC LIMIT 1"
    )


def run_events_rows(*, run_id: int, after_seq: int) -> list[tuple[int, str, Any]]:
    """``(seq, type, payload)`` of the run's events after ``after_seq``, in order."""
    payload = _field(RunEvent, "payload")
    with connection.cursor() as cursor:
        cursor.execute(_events_sql(), [run_id, after_seq])
        rows = cursor.fetchall()
    return [(seq, kind, _convert(payload, value)) for seq, kind, value in rows]


@cache
def _events_sql() -> str:
    seq = _column(RunEvent, "seq")
    return (
        f"SELECT {seq}, {_column(RunEvent, 'type')}, {_column(RunEvent, 'payload')} "
        f"FROM {_q(RunEvent._meta.db_table)} "
        f"WHERE {_column(RunEvent, 'run')} = %s AND {seq} > %s ORDER BY {seq}"
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
        name: _convert(_field(Run, name), value) for name, value in zip(names, row, strict=True)
    }


@cache
def _tool_lists_sql() -> str:
    columns = ", ".join(_column(Run, name) for name in ("tools", "deferred", "explain"))
    return f"SELECT {columns} FROM {_q(Run._meta.db_table)} WHERE {_column(Run, 'id')} = %s"


_FINISH_FIELDS = ("id", "conversation", "status", "text", "error")


def run_for_finish(*, run_id: int) -> Run | None:
    """The run's few fields closing it reads, locked (``FOR UPDATE`` where rows lock)."""
    with connection.cursor() as cursor:
        cursor.execute(_for_finish_sql(), [run_id])
        row = cursor.fetchone()
    if row is None:
        return None
    fields = [_field(Run, name) for name in _FINISH_FIELDS]
    values = [_convert(field, value) for field, value in zip(fields, row, strict=True)]
    return Run.from_db(connection.alias, [f.attname for f in fields], values)


@cache
def _for_finish_sql() -> str:
    columns = ", ".join(_column(Run, name) for name in _FINISH_FIELDS)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return f"SELECT {columns} FROM {_q(Run._meta.db_table)} WHERE {_column(Run, 'id')} = %s{lock}"


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
        f"UPDATE {_q(c._meta.db_table)} SET {_column(c, 'status')} = %s, "
        f"{_column(c, 'is_error')} = %s, {_column(c, 'result_preview')} = %s "
        f"WHERE {_column(c, 'run')} = %s AND {_column(c, 'status')} IN (%s, %s)"
    )


def tool_call_status_set(*, run_id: int, call_id: str, status: str) -> None:
    """Set one call's status (approval asked or answered); nothing read back."""
    with connection.cursor() as cursor:
        cursor.execute(_call_status_sql(), [status, run_id, call_id])


@cache
def _call_status_sql() -> str:
    c = ToolCallRecord
    return (
        f"UPDATE {_q(c._meta.db_table)} SET {_column(c, 'status')} = %s "
        f"WHERE {_column(c, 'run')} = %s AND {_column(c, 'call_id')} = %s"
    )


def run_conversation_todos_set(*, run_id: int, todos: Any) -> None:
    """Store the todo list on the conversation of run ``run_id``; nothing read back."""
    with connection.cursor() as cursor:
        cursor.execute(_todos_sql(), [_prep(Conversation, "todos", todos), run_id])


@cache
def _todos_sql() -> str:
    return (
        f"UPDATE {_q(Conversation._meta.db_table)} SET {_column(Conversation, 'todos')} = %s "
        f"WHERE {_column(Conversation, 'id')} = (SELECT {_column(Run, 'conversation')} "
        f"FROM {_q(Run._meta.db_table)} WHERE {_column(Run, 'id')} = %s)"
    )
