"""A statement sent now and answered later: the shape every batch job that reads uses
(``chat_app.db_batch``'s ``read_after_send``), shared by the apps that provide such reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection

__all__ = ["query_sent"]

_T = TypeVar("_T")


def query_sent(sql: str, params: Sequence[Any], read: Callable[[Any], _T]) -> Callable[[], _T]:
    """Send ``sql`` on a cursor of its own; the returned function reads the answer with
    ``read(cursor)`` and closes the cursor. In a pipelined block
    (``chat_app.db_batch.statements_pipelined``) call it after the block: the answer comes with the
    block's one round trip."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
    except BaseException:
        cursor.close()
        raise

    def answer() -> _T:
        try:
            return read(cursor)
        finally:
            cursor.close()

    return answer
