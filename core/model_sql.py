"""Plain SQL from the models' own metadata: the one home for names and values in it.

A few statements run for every turn (``chat_app.turn_store``) and compiling each
through the ORM cost several times running it. Their text is built here, once per
shape, from ``Model._meta`` (a public API): tables, columns and the fields an INSERT
writes come from the model, never from a hand-written list. Values go through each
field's own conversion both ways (``get_db_prep_save`` on the way in, the backend's and
the field's converters on the way out), so a row written or read here is the row the
ORM would write or read. Django's query compilers (``InsertQuery``,
``SQLInsertCompiler``) are private and are not used.

An INSERT takes each row's *values*, by field attname (``run_id``, ``text``), never
model instances: making one (``Model.__init__``: signals, every field's default) cost
more than the statement. What ``save()`` would write for a field not given comes from
a plan made once per model and set of names given (``_InsertPlan``):

- a callable default (``uuid4``, ``lease_deadline``, ``dict``) is called for each row;
- a constant default's column value is computed once when it is immutable (``""``,
  ``0``, ``Decimal(0)``), else for each row;
- ``auto_now`` / ``auto_now_add``: the time at write, from the field's own ``pre_save``;
- a field with a ``db_default`` is left out of the statement, so the database fills it;
- the key, when the database assigns it, is left out (and read back: RETURNING).

A value given is written as given (an ``auto_now`` field's too: the caller chose the
time), through ``get_db_prep_save``. Fields whose ``pre_save`` needs the instance
itself (``FileField``, custom fields), inherited models and ``order_with_respect_to``
are refused: those rows are the ORM's to write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from functools import cache
from types import SimpleNamespace
from typing import Any, TypeVar
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import AutoField, DateField, Field, Model, TimeField

__all__ = [
    "column",
    "db_value",
    "insert_returning",
    "insert_values",
    "instance_from_row",
    "instance_stored",
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


_IMMUTABLE = frozenset({str, int, float, bool, bytes, Decimal, UUID, type(None)})
"""Types of a constant default (and of its column value) that can be computed once and
shared by every row: nothing can change them in place."""
_NOW = SimpleNamespace()
"""What an ``auto_now`` field's ``pre_save`` stores the time on (it returns it too)."""


class _InsertPlan:
    """How one model's rows, given as values of the fields ``names``, become an INSERT.

    ``fields``: the columns written, in order; ``_makers``: for each, a function of the
    row and the connection that gives the column's value. ``key``: the key's place in a
    row's values, or None when the database assigns it."""

    def __init__(self, model: type[Model], names: tuple[str, ...]) -> None:
        meta = model._meta
        if meta.parents or meta.order_with_respect_to:
            raise TypeError(f"{model.__name__}: inherited or ordered rows are the ORM's to write")
        database, given = _database(), set(names)
        fields = {f.attname: f for f in meta.local_concrete_fields}
        unknown = given - fields.keys()
        if unknown:
            raise TypeError(f"{model.__name__} has no field (attname) {sorted(unknown)}")
        written: list[Field[Any, Any]] = []
        makers: list[Callable[[Mapping[str, Any], Any], Any]] = []
        for name, field in fields.items():
            make = _maker(model, field, name in given, database)
            if make is not None:
                written.append(field)
                makers.append(make)
        self.model, self.fields, self._makers = model, tuple(written), tuple(makers)
        self.key = written.index(meta.pk) if meta.pk in written else None
        self._sql: dict[tuple[int, bool], str] = {}

    def values(self, row: Mapping[str, Any], database: Any) -> list[Any]:
        """The row's column values, in the order of ``fields``."""
        return [make(row, database) for make in self._makers]

    def sql(self, rows: int, *, returning: bool = False) -> str:
        """INSERT of ``rows`` rows; ``returning``: the key returned (where the database
        can, ``connection.features.can_return_columns_from_insert``)."""
        sql = self._sql.get((rows, returning))
        if sql is None:
            model = self.model
            columns = ", ".join(connection.ops.quote_name(f.column) for f in self.fields)
            marks = f"({', '.join(['%s'] * len(self.fields))})"
            sql = f"INSERT INTO {table(model)} ({columns}) VALUES {', '.join([marks] * rows)}"
            if returning and connection.features.can_return_columns_from_insert:
                sql += f" RETURNING {connection.ops.quote_name(model._meta.pk.column)}"
            self._sql[(rows, returning)] = sql
        return sql


def _maker(
    model: type[Model], field: Field[Any, Any], given: bool, database: Any
) -> Callable[[Mapping[str, Any], Any], Any] | None:
    """How a row gets field's column value, as ``save()`` would write it; None: the
    column is left out (the database fills it in)."""
    if type(field).pre_save is not Field.pre_save and not isinstance(field, (DateField, TimeField)):
        # FileField and custom fields: their pre_save needs the model instance itself.
        raise TypeError(f"{model.__name__}.{field.name}: its pre_save needs a model instance")
    if field.generated:
        if given:
            raise TypeError(f"{model.__name__}.{field.name} is generated by the database")
        return None
    prep = field.get_db_prep_save
    if given:
        name = field.attname
        return lambda row, database: prep(row[name], database)
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        # The field's own pre_save: the time at write, of the field's kind (date, time...).
        return lambda row, database: prep(field.pre_save(_NOW, True), database)
    if field.primary_key and isinstance(field, AutoField):
        return None  # the database assigns it (read back with RETURNING)
    if field.has_default():
        if not callable(field.default) and type(field.default) in _IMMUTABLE:
            constant = prep(field.default, database)
            if type(constant) in _IMMUTABLE:
                return lambda row, database: constant
        return lambda row, database: prep(field.get_default(), database)
    if field.has_db_default():
        return None
    empty = prep(field.get_default(), database)  # None, or "" for a text column
    return lambda row, database: empty


_plans: dict[tuple[type[Model], tuple[str, ...]], _InsertPlan] = {}


def _insert_plan(model: type[Model], names: tuple[str, ...]) -> _InsertPlan:
    plan = _plans.get((model, names))
    if plan is None:
        plan = _plans[(model, names)] = _InsertPlan(model, names)
    return plan


def insert_values(
    model: type[Model],
    rows: Sequence[Mapping[str, Any]],
    *,
    suffix: str = "",
    params: Sequence[Any] = (),
) -> None:
    """INSERT ``rows`` of ``model`` (each the values of some fields, by attname:
    ``run_id``, ``text``) in multi-row statements, nothing read back (so it may go out
    in a pipeline). ``suffix`` and ``params``: a conflict clause after the VALUES, and
    its parameters."""
    if not rows:
        return
    database = _database()
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row), []).append(row)
    with connection.cursor() as cursor:
        for names, group in groups.items():
            plan = _insert_plan(model, names)
            for start in range(0, len(group), _ROWS_PER_INSERT):
                chunk = group[start : start + _ROWS_PER_INSERT]
                values = [v for row in chunk for v in plan.values(row, database)]
                cursor.execute(f"{plan.sql(len(chunk))}{suffix}", [*values, *params])


def insert_returning(cursor: Any, model: type[Model], values: Mapping[str, Any]) -> Any:
    """Send the INSERT of one row of ``model`` on ``cursor``; its key when it is known now
    (given, or a default's), else None: the database assigns it, and it comes back as the
    statement's one row (read it with :func:`key_read`)."""
    plan = _insert_plan(model, tuple(values))
    row = plan.values(values, _database())
    if plan.key is not None:
        cursor.execute(plan.sql(1), row)
        key = model._meta.pk
        return values[key.attname] if key.attname in values else key.to_python(row[plan.key])
    cursor.execute(plan.sql(1, returning=True), row)
    return None


def key_read(cursor: Any, model: type[Model]) -> Any:
    """After :func:`insert_returning` returned None: the key the database assigned."""
    meta = model._meta
    if connection.features.can_return_columns_from_insert:
        (key,) = cursor.fetchone()
        return key
    return connection.ops.last_insert_id(cursor, meta.db_table, meta.pk.column)


def instance_stored(model: type[_M], values: Mapping[str, Any]) -> _M:
    """The instance the ORM loads for a row just written with ``values`` (by attname,
    the key's included; fields not given are deferred)."""
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(connection.alias, names, [values[name] for name in names])


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
