"""How many turns one user may start: per minute, and running at once.

Every turn (socket, API, any process) opens its run through
``run_lifecycle.run_open_sent``, which sends :func:`turn_start_allow_sent` inside its
transaction right after the run's INSERT, with the user's row locked and that run left
out of the counts, so the count is exact across processes: the database is the truth,
and two daphne processes cannot both let the 31st turn of a minute through. The check
comes after the INSERT so that a batch of starts sends both in one pipeline
(``chat_app.turn_inputs.turn_prepare_sent``): each start's count then includes the runs
the batch's earlier starts opened, as one by one. A refusal raises
:class:`~core.api_errors.ThrottledError`: HTTP 429 from the API, an
error frame of kind ``throttled`` on the socket. Nothing queues: the client retries
after the time the message names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache, partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from chat_app.db_batch import read_after_send
from chat_app.models import Conversation, Run
from chat_app.raw_sql import column, python_value, table
from core.api_errors import ThrottledError
from openprogram_site.db_sent import query_sent

__all__ = [
    "RUNNING_RETRY_AFTER",
    "TURN_WINDOW",
    "turn_budget_refusal_sent",
    "turn_start_allow_sent",
]

TURN_WINDOW = timedelta(minutes=1)
RUNNING_RETRY_AFTER = 5
"""Seconds a client refused for too many turns at once is told to wait (``Retry-After``):
when a running turn ends cannot be known, so this is a polling pace, not a promise."""


def turn_start_allow_sent(
    *, owner_id: int, exclude_run_id: int | None = None
) -> Callable[[], None]:
    """Send the check whether ``owner_id`` may start another turn now; the returned
    function gives the verdict (in a pipelined block: after it), raising ThrottledError
    if not.

    Call inside a transaction: the owner's row is locked (PostgreSQL) or the whole
    database is (SQLite's immediate transactions), so the count cannot go stale
    before the run is created. A limit of 0 turns that check off.

    ``exclude_run_id``: the run being started, already INSERTed in this transaction (a
    turn's start sends its run and this check in one pipeline): it is left out of the
    counts, so the verdict is the one before it, and every run an earlier job of the
    same transaction opened counts, as if they had gone one by one.
    """
    per_minute = settings.OPENPROGRAM_TURNS_PER_MINUTE
    concurrent = settings.OPENPROGRAM_MAX_CONCURRENT_TURNS
    if not per_minute and not concurrent:
        return lambda: None
    now = timezone.now()
    # One statement: lock the owner's row, count the running runs (a run whose lease ran
    # out belongs to a dead server and holds no slot) and read the start of the
    # ``per_minute``-th latest run of the last minute (there is one: the limit is hit).
    counts = _owner_turns_sent(
        owner_id=owner_id,
        now=now,
        recent_after=now - TURN_WINDOW,
        nth=max(per_minute, 1),
        exclude_run_id=exclude_run_id,
    )
    return partial(_verdict, counts, now=now, per_minute=per_minute, concurrent=concurrent)


def _verdict(
    counts: Callable[[], tuple[int, datetime | None]],
    *,
    now: datetime,
    per_minute: int,
    concurrent: int,
) -> None:
    running, nth_recent = counts()
    if concurrent and running >= concurrent:
        raise ThrottledError(
            f"too many turns running: {concurrent} at once is the limit; "
            f"wait for one to finish or stop it (try again in {RUNNING_RETRY_AFTER} s)",
            retry_after=RUNNING_RETRY_AFTER,
        )
    if per_minute and nth_recent is not None:
        wait = math.ceil((nth_recent + TURN_WINDOW - now).total_seconds())
        raise ThrottledError(
            f"too many turns: {per_minute} a minute is the limit; try again in {max(wait, 1)} s",
            retry_after=max(wait, 1),
        )


def _owner_turns_sent(
    *, owner_id: int, now: datetime, recent_after: datetime, nth: int, exclude_run_id: int | None
) -> Callable[[], tuple[int, datetime | None]]:
    started = Run._meta.get_field("started")
    moment = partial(started.get_db_prep_value, connection=connection)
    # No run has key 0: "leave out run 0" leaves out nothing, with one statement's shape.
    other = 0 if exclude_run_id is None else exclude_run_id

    def counts(cursor: Any) -> tuple[int, datetime | None]:
        running, nth_started = cursor.fetchone()
        if nth_started is not None:
            nth_started = python_value(started, nth_started)
        return int(running or 0), nth_started

    params = [owner_id, other, "running", moment(now), owner_id, other, moment(recent_after)]
    return query_sent(_owner_turns_sql(), [*params, nth - 1, owner_id], counts)


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


@read_after_send
def turn_budget_refusal_sent(
    *, user_id: int, run_id: int | None, turn_cost: float
) -> Callable[[], str | None]:
    """The owner's budget verdict (``usage_app.services.budget_verdict``) as a batch job
    (``chat_app.db_batch``): the statement is sent now, the verdict read by the returned
    function, so on PostgreSQL a batch's budget checks share one round trip with its
    history writes."""
    from usage_app.selectors import budget_and_spend_sent
    from usage_app.services import budget_verdict

    cursor = connection.cursor()
    try:
        answer = budget_and_spend_sent(cursor, user_id=user_id, exclude_run_id=run_id)
    except BaseException:
        cursor.close()
        raise

    def verdict() -> str | None:
        try:
            budget, recorded = answer()
        finally:
            cursor.close()
        return budget_verdict(budget=budget, recorded=recorded, turn_cost=turn_cost)

    return verdict
