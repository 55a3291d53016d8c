"""How many turns one user may start: per minute, and running at once.

Every turn (socket, API, any process) opens its run through ``chat_app.turn_store``'s
start, which sends :func:`owner_turns_statement` inside its transaction right after the
run's INSERT, with the user's row locked and that run left out of the counts, so the
count is exact across processes: the database is the truth, and two daphne processes
cannot both let the 31st turn of a minute through. The check comes after the INSERT so
that a batch of starts sends both in one pipeline: each start's count then includes the
runs the batch's earlier starts opened, as one by one. A refusal
(:func:`turn_start_verdict`) raises :class:`~core.api_errors.ThrottledError`:
HTTP 429 with ``Retry-After`` from the API, an error frame of kind ``throttled`` on the
socket. Nothing queues: the client retries after the time the message names.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

from chat_app.models import Conversation, Run
from core.api_errors import ThrottledError
from core.model_sql import column, db_value, python_value, table

__all__ = [
    "RUNNING_RETRY_AFTER",
    "TURN_WINDOW",
    "limits_on",
    "owner_turns_statement",
    "turn_start_verdict",
]

TURN_WINDOW = timedelta(minutes=1)
RUNNING_RETRY_AFTER = 5
"""Seconds a client refused for too many turns at once is told to wait (``Retry-After``):
when a running turn ends cannot be known, so this is a polling pace, not a promise."""


def limits_on() -> bool:
    """False when both limits are 0 (off): a start then sends no check at all."""
    return bool(settings.OPENPROGRAM_TURNS_PER_MINUTE or settings.OPENPROGRAM_MAX_CONCURRENT_TURNS)


def owner_turns_statement(
    *, owner_id: int, now: datetime, exclude_run_id: int | None = None
) -> tuple[str, list[Any]]:
    """The one statement behind the verdict: it locks the owner's row (PostgreSQL; SQLite's
    immediate transaction holds the whole database), counts the running runs (a run whose
    lease ran out belongs to a dead server and holds no slot) and reads the start of the
    ``per_minute``-th latest run of the last minute (there is one: the limit is hit).
    Call inside a transaction, so the count cannot go stale before the run is created.

    ``exclude_run_id``: the run being started, already INSERTed in this transaction: it
    is left out of the counts, so the verdict is the one before it, and every run an
    earlier job of the same transaction opened counts, as if they had gone one by one.
    """
    # No run has key 0: "leave out run 0" leaves out nothing, with one statement's shape.
    other = 0 if exclude_run_id is None else exclude_run_id
    nth = max(settings.OPENPROGRAM_TURNS_PER_MINUTE, 1)
    recent_after = now - TURN_WINDOW
    params = [
        owner_id,
        other,
        "running",
        db_value(Run, "started", now),
        owner_id,
        other,
        db_value(Run, "started", recent_after),
        nth - 1,
        owner_id,
    ]
    return _owner_turns_sql(), params


def turn_start_verdict(row: tuple[Any, Any], *, now: datetime) -> None:
    """Raise ThrottledError if the owner may not start another turn, from the row
    :func:`owner_turns_statement` answered. A limit of 0 turns its check off."""
    per_minute = settings.OPENPROGRAM_TURNS_PER_MINUTE
    concurrent = settings.OPENPROGRAM_MAX_CONCURRENT_TURNS
    running, nth_recent = int(row[0] or 0), row[1]
    if concurrent and running >= concurrent:
        raise ThrottledError(
            f"too many turns running: {concurrent} at once is the limit; "
            f"wait for one to finish or stop it (try again in {RUNNING_RETRY_AFTER} s)",
            retry_after=RUNNING_RETRY_AFTER,
        )
    if per_minute and nth_recent is not None:
        started = python_value(Run._meta.get_field("started"), nth_recent)
        wait = max(math.ceil((started + TURN_WINDOW - now).total_seconds()), 1)
        raise ThrottledError(
            f"too many turns: {per_minute} a minute is the limit; try again in {wait} s",
            retry_after=wait,
        )


@cache
def _owner_turns_sql() -> str:
    run, conversation, user = Run, Conversation, get_user_model()

    def col(model: Any, name: str) -> str:
        return f"{table(model)}.{column(model, name)}"

    owned_runs = (
        f"FROM {table(run)} INNER JOIN {table(conversation)} "
        f"ON {col(run, 'conversation')} = {col(conversation, 'id')} "
        f"WHERE {col(conversation, 'owner')} = %s AND {col(run, 'id')} <> %s"
    )
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return (
        f"SELECT (SELECT COUNT(*) {owned_runs} AND {col(run, 'status')} = %s "
        f"AND {col(run, 'lease_until')} > %s), "
        f"(SELECT {col(run, 'started')} {owned_runs} AND {col(run, 'started')} > %s "
        f"ORDER BY {col(run, 'started')} DESC LIMIT 1 OFFSET %s) "
        f"FROM {table(user)} WHERE {column(user, user._meta.pk.name)} = %s{lock}"
    )
