"""Names and values for the fixed-shape SQL of a turn's hot path (``turn_sql``,
``history_sql``, ``turn_limits``): tables and columns from the models' own metadata,
quoted for the connection's database; values through each field's own conversion both
ways, so a row written or read here is what the ORM would write or read."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model

__all__ = ["column", "db_value", "instance_from_row", "python_value", "table"]

_M = TypeVar("_M", bound=Model)


@cache
def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def db_value(model: type[Model], name: str, value: Any) -> Any:
    """``value`` for field ``name``'s column, as the ORM would save it."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def python_value(field: Field[Any, Any], value: Any) -> Any:
    """A column's value as the ORM returns it (the backend's and the field's converters)."""
    for convert in _converters(field):
        value = convert(value, field, connection)
    return value


@cache
def _converters(field: Field[Any, Any]) -> tuple[Any, ...]:
    backend = connection.ops.get_db_converters(field.cached_col)
    return (*backend, *field.get_db_converters(connection))


def instance_from_row(model: type[_M], fields: Sequence[Field[Any, Any]], row: Sequence[Any]) -> _M:
    """The instance the ORM would load from ``row`` (the columns of ``fields``, in order)."""
    values = [python_value(field, value) for field, value in zip(fields, row, strict=True)]
    return model.from_db(connection.alias, [f.attname for f in fields], values)
