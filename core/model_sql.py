"""Plain SQL from the models' own metadata: the one home for names and values in it.

A few statements run for every turn (``chat_app.turn_store``) and compiling each
through the ORM cost several times running it. Their text is built here, once per
shape, from ``Model._meta`` (a public API): tables, columns and the fields an INSERT
writes come from the model, never from a hand-written list. Values go through each
field's own conversion both ways (``get_db_prep_save`` on the way in, the backend's and
the field's converters on the way out), so a row written or read here is the row the
ORM would write or read. Django's query compilers (``InsertQuery``,
``SQLInsertCompiler``) are private and are not used.

An INSERT takes model instances: defaults were evaluated when each instance was made
(a callable such as ``uuid4`` or ``lease_deadline`` once per row), ``auto_now`` /
``auto_now_add`` are applied by the field's ``pre_save`` as ``save()`` applies them,
and a field left to a ``db_default`` is left out of the statement, so the database
fills it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import NOT_PROVIDED, Field, Model

__all__ = [
    "column",
    "db_value",
    "insert_returning",
    "insert_rows",
    "insert_sql",
    "instance_from_row",
    "instance_values",
    "key_read",
    "python_value",
    "table",
    "update_row",
    "update_sql",
]

_M = TypeVar("_M", bound=Model)
_ROWS_PER_INSERT = 100
"""Rows per multi-row INSERT: a few hundred parameters, far below every backend's limit."""


@cache
def table(model: type[Model]) -> str:
    """The model's table, quoted for the connection's database."""
    return connection.ops.quote_name(model._meta.db_table)


@cache
def column(model: type[Model], name: str) -> str:
    """Field ``name``'s column, quoted."""
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _database() -> Any:
    """The connection itself: the fields' conversions read its attributes many times, and
    each read through ``django.db.connection`` (a proxy) is a context-local look-up."""
    return connections[DEFAULT_DB_ALIAS]


def db_value(model: type[Model], name: str, value: Any) -> Any:
    """``value`` for field ``name``'s column, as the ORM saves it."""
    return model._meta.get_field(name).get_db_prep_save(value, _database())


def python_value(field: Field[Any, Any], value: Any) -> Any:
    """A column's value as the ORM returns it (the backend's and the field's converters)."""
    database = _database()
    for convert in _converters(field):
        value = convert(value, field, database)
    return value


@cache
def _converters(field: Field[Any, Any]) -> tuple[Any, ...]:
    backend = connection.ops.get_db_converters(field.get_col(field.model._meta.db_table))
    return (*backend, *field.get_db_converters(connection))


def instance_from_row(model: type[_M], fields: Sequence[Field[Any, Any]], row: Sequence[Any]) -> _M:
    """The instance the ORM would load from ``row`` (the columns of ``fields``, in order)."""
    values = [python_value(field, value) for field, value in zip(fields, row, strict=True)]
    return model.from_db(connection.alias, [f.attname for f in fields], values)


def _written_fields(instance: Model) -> tuple[Field[Any, Any], ...]:
    """The fields an INSERT of ``instance`` writes: every concrete one, but the key when
    the database assigns it and a field still holding its ``db_default``."""
    model = type(instance)
    fields = _insert_fields(model, instance.pk is not None)
    held = [
        f
        for f in _db_default_fields(model)
        if hasattr(getattr(instance, f.attname), "resolve_expression")  # DatabaseDefault
    ]
    return tuple(f for f in fields if f not in held) if held else fields


@cache
def _insert_fields(model: type[Model], keyed: bool) -> tuple[Field[Any, Any], ...]:
    return tuple(f for f in model._meta.concrete_fields if keyed or not f.primary_key)


@cache
def _db_default_fields(model: type[Model]) -> tuple[Field[Any, Any], ...]:
    return tuple(f for f in model._meta.concrete_fields if f.db_default is not NOT_PROVIDED)


def instance_values(instance: Model, fields: Iterable[Field[Any, Any]], *, add: bool) -> list[Any]:
    """Each field's stored value, as ``save()`` computes it: ``pre_save`` (which sets
    ``auto_now``/``auto_now_add`` on the instance too), then ``get_db_prep_save``."""
    database = _database()
    return [f.get_db_prep_save(f.pre_save(instance, add), database) for f in fields]


@cache
def insert_sql(
    model: type[Model], fields: tuple[Field[Any, Any], ...], rows: int = 1, returning: bool = False
) -> str:
    """INSERT of ``rows`` rows of ``fields``; ``returning``: the key returned (where the
    database can, ``connection.features.can_return_columns_from_insert``)."""
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    marks = f"({', '.join(['%s'] * len(fields))})"
    sql = f"INSERT INTO {table(model)} ({columns}) VALUES {', '.join([marks] * rows)}"
    if returning and connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {connection.ops.quote_name(model._meta.pk.column)}"
    return sql


def insert_rows(
    instances: Sequence[Model], *, suffix: str = "", params: Sequence[Any] = ()
) -> None:
    """INSERT ``instances`` (all of one model) in multi-row statements, nothing read
    back (so it may go out in a pipeline). ``suffix`` and ``params``: a conflict clause
    after the VALUES, and its parameters."""
    if not instances:
        return
    model = type(instances[0])
    groups: dict[tuple[Field[Any, Any], ...], list[Model]] = {}
    for instance in instances:
        groups.setdefault(_written_fields(instance), []).append(instance)
    with connection.cursor() as cursor:
        for fields, rows in groups.items():
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                values = [v for row in chunk for v in instance_values(row, fields, add=True)]
                sql = insert_sql(model, fields, len(chunk))
                cursor.execute(f"{sql}{suffix}", [*values, *params])


def insert_returning(cursor: Any, instance: Model) -> None:
    """Send the INSERT of ``instance`` on ``cursor``; its key comes back as the
    statement's one row (read it with :func:`key_read`). With its key set, nothing is
    read back."""
    fields = _written_fields(instance)
    returning = instance.pk is None
    cursor.execute(
        insert_sql(type(instance), fields, 1, returning),
        instance_values(instance, fields, add=True),
    )


def key_read(cursor: Any, instance: Model) -> None:
    """After :func:`insert_returning`: set the instance's key (the database's) and mark
    it stored, as ``save()`` leaves it."""
    if instance.pk is None:
        model = type(instance)
        if connection.features.can_return_columns_from_insert:
            (key,) = cursor.fetchone()
        else:
            key = connection.ops.last_insert_id(cursor, model._meta.db_table, model._meta.pk.column)
        instance.pk = key
    # Django documents ``_state.adding`` / ``_state.db`` (Model reference, ``from_db``).
    instance._state.adding = False  # noqa: SLF001
    instance._state.db = connection.alias  # noqa: SLF001


@cache
def update_sql(model: type[Model], names: tuple[str, ...], where: tuple[str, ...] = ("pk",)) -> str:
    """UPDATE of fields ``names`` of the rows whose fields ``where`` equal the parameters
    after the values."""
    assignments = ", ".join(f"{column(model, name)} = %s" for name in names)
    condition = " AND ".join(f"{_where_column(model, name)} = %s" for name in where)
    return f"UPDATE {table(model)} SET {assignments} WHERE {condition}"


def _where_column(model: type[Model], name: str) -> str:
    if name == "pk":
        return connection.ops.quote_name(model._meta.pk.column)
    return column(model, name)


def update_row(model: type[Model], *, pk: Any, values: dict[str, Any]) -> None:
    """One UPDATE of the named fields of one row, values as the ORM saves them; nothing
    read back (so it may go out in a pipeline)."""
    names, database = tuple(values), _database()
    fields = model._meta
    params = [fields.get_field(n).get_db_prep_save(values[n], database) for n in names]
    with connection.cursor() as cursor:
        cursor.execute(update_sql(model, names), [*params, pk])
