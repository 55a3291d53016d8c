"""Helpers for the turn store's tests: batches formed on purpose, statements observed."""

from __future__ import annotations

from typing import Any

from django.db import connection

from audit_app.recording import audit_calls_finished
from chat_app import turn_store
from chat_app.schemas import TurnOptions
from chat_app.turn_store._batch import _run_jobs
from chat_app.turn_store._history import record_job
from chat_app.turn_store._start import start_job

__all__ = ["first_in_line", "job_now", "logged_job", "record_now", "start_now"]


def first_in_line() -> Any:
    """A store call that starts a batch alone (run 0 has no lease to renew), so the calls
    gathered after it share the next batch."""
    return turn_store.renew_lease(run_id=0)


def logged_job(*, job: Any, log: list[tuple[str, bool]], **kwargs: Any) -> Any:
    """The store job ``job(**kwargs)``, step by step as the batch runs it, each statement
    logged with whether it went out in a pipeline."""

    def record(execute, sql, params, many, context):
        on_pg = connection.vendor == "postgresql"
        log.append((sql, bool(on_pg and connection.connection.pgconn.pipeline_status)))
        return execute(sql, params, many, context)

    inner = job(**kwargs)
    while True:
        with connection.execute_wrapper(record):
            try:
                next(inner)
            except StopIteration as done:
                return done.value
        yield


def job_now(job: Any, **kwargs: Any) -> Any:
    """The store job ``job(**kwargs)`` in the test's thread, as a batch of one runs it;
    its result (its exception raised)."""
    ((ok, result),) = _run_jobs([(job, kwargs)])
    if not ok:
        raise result
    return result


def start_now(*, user: Any, conversation: Any, text: str, **kwargs: Any) -> Any:
    """A turn's start through the store (:func:`job_now`): the prepared turn."""
    kwargs = {"options": TurnOptions(), "attended": None, "may_abandon_orphans": False, **kwargs}
    return job_now(start_job, user=user, conversation_id=conversation.pk, text=text, **kwargs)


def record_now(*, run_id: int, events: list[dict[str, Any]], owner_id: int | None = None) -> None:
    """One step of history through the store (:func:`job_now`), its audit trail facts
    gathered first as ``turn_store.record`` gathers them."""
    audited = audit_calls_finished(run_id=run_id, events=events)
    job_now(record_job, run_id=run_id, owner_id=owner_id, events=events, audited=audited)
