"""The turn store's one batcher: concurrent turns' jobs in one transaction, one thread hop.

A job is a generator function of the store. Its body alternates between two kinds of
step, split by ``yield``:

- a **sending** step (the first, the third, ...) only sends statements: writes, and
  reads through :func:`send` whose answers it does not look at yet;
- a **reading** step (the second, the fourth, ...) reads those answers
  (:meth:`Sent.one`, :meth:`Sent.all`), decides, and may run any statement it needs on
  the spot (rare paths: the ORM is fine there).

The job's return value is its caller's result. On PostgreSQL the batch runs the
sending steps of all its jobs inside one pipeline (psycopg's pipeline mode: one round
trip for all of them), then all their reading steps, then the next sending steps in one
more pipeline, and so on. Elsewhere (SQLite: no round trips to save, and an unread
statement makes it compile the next of its kind anew) each job runs to its end in
turn.

A batch is one transaction. If anything in it fails (a statement, a check that raises,
a pipeline), it is rolled back and each job runs again alone, in a transaction of its
own and without a pipeline, so only the failing job fails (in its caller). A job that
catches a database error of its own (a savepoint) sees it only when it runs alone: in
a pipeline the error surfaces at the pipeline's end, and the batch is run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from django.db import close_old_connections, connection, transaction

__all__ = ["Job", "Sent", "batched", "run_alone", "send"]

_T = TypeVar("_T")
Job = Generator[None, None, _T]
_MAX_BATCH = 200
"""Jobs per transaction: a long queue is worked off in slices, so no batch holds the
database's write lock for long."""


_local = threading.local()


class Sent:
    """A statement sent on a cursor of its own; its answer is read in a reading step.
    A cursor a failing job never read is closed when its jobs end (:func:`_cursors_closed`):
    an unread SELECT would hold its tables (SQLite) until the cursor is collected."""

    def __init__(self, sql: str, params: Sequence[Any]) -> None:
        self._cursor = connection.cursor()
        getattr(_local, "cursors", []).append(self._cursor)
        self._cursor.execute(sql, params)

    def one(self) -> Any:
        """The first row (None if there is none); the cursor is closed."""
        try:
            return self._cursor.fetchone()
        finally:
            self._cursor.close()

    def all(self) -> list[Any]:
        """Every row; the cursor is closed."""
        try:
            return list(self._cursor.fetchall())
        finally:
            self._cursor.close()


def send(sql: str, params: Sequence[Any]) -> Sent:
    """Send a reading statement in a sending step; read it in the next reading step."""
    return Sent(sql, params)


@contextlib.contextmanager
def _pipelined() -> Iterator[None]:
    """PostgreSQL's pipeline mode around the block: its statements go out together and
    are answered at its end (a cursor's rows and row count are there only then)."""
    connection.ensure_connection()
    with connection.connection.pipeline():
        yield


@contextlib.contextmanager
def _cursors_closed() -> Iterator[None]:
    """Every cursor :class:`Sent` opens inside the block is closed at its end, read or not."""
    outer = getattr(_local, "cursors", None)
    _local.cursors = []
    try:
        yield
    finally:
        for cursor in _local.cursors:
            with contextlib.suppress(Exception):  # closing twice, or after a failed pipeline
                cursor.close()
        _local.cursors = outer


def _advance(job: Job[Any]) -> tuple[bool, Any]:
    """Run the job's next step: ``(True, result)`` once it has returned."""
    try:
        next(job)
    except StopIteration as done:
        return True, done.value
    return False, None


def run_alone(job: Job[_T]) -> _T:
    """Every step of ``job``, here and now, statement by statement (the caller's
    transaction, if any, covers it)."""
    with _cursors_closed():
        while True:
            done, value = _advance(job)
            if done:
                return value


def _run_together(jobs: list[Job[Any]]) -> list[Any]:
    """PostgreSQL: each round's sending steps in one pipeline, then the reading steps."""
    results: list[Any] = [None] * len(jobs)
    live, sending = list(range(len(jobs))), True
    while live:
        still = []
        with _pipelined() if sending else contextlib.nullcontext():
            for i in live:
                done, value = _advance(jobs[i])
                if done:
                    results[i] = value
                else:
                    still.append(i)
        live, sending = still, not sending
    return results


@dataclass
class _Job:
    fn: Callable[..., Job[Any]]
    kwargs: dict[str, Any]
    future: asyncio.Future[Any]


def _run_jobs(jobs: list[tuple[Callable[..., Job[Any]], dict[str, Any]]]) -> list[tuple[bool, Any]]:
    """Run jobs in one transaction; ``(ok, result or exception)`` for each. If one fails,
    the batch is rolled back and each job runs again alone (a savepoint per job would
    cost two statements every time; failures are rare)."""
    try:
        with transaction.atomic(), _cursors_closed():
            if connection.vendor == "postgresql":
                results = _run_together([fn(**kwargs) for fn, kwargs in jobs])
            else:
                results = [run_alone(fn(**kwargs)) for fn, kwargs in jobs]
            return [(True, result) for result in results]
    except Exception:
        # A lone job that failed alone fails as it is; pipelined, it may have failed
        # only at the pipeline's end, past a savepoint of its own: it runs again alone.
        if len(jobs) == 1 and connection.vendor != "postgresql":
            raise
    outcomes: list[tuple[bool, Any]] = []
    for fn, kwargs in jobs:
        try:
            with transaction.atomic():
                result = run_alone(fn(**kwargs))
        except Exception as exc:  # the job's, or its commit's (PostgreSQL checks FKs there)
            outcomes.append((False, exc))
        else:
            outcomes.append((True, result))
    return outcomes


def _run_in_pool_thread(jobs: list[tuple[Callable[..., Job[Any]], dict[str, Any]]]) -> Any:
    # What Channels' database_sync_to_async does around a call, in a thread of our own.
    close_old_connections()
    try:
        return _run_jobs(jobs)
    finally:
        close_old_connections()


_pool: ThreadPoolExecutor | None = None


def _in_database_thread(
    jobs: list[tuple[Callable[..., Job[Any]], dict[str, Any]]],
) -> asyncio.Future[list[tuple[bool, Any]]] | Any:
    """SQLite: Channels' database thread (one writer suits it, and its connection is
    shared with the rest of the app). Client-server databases: a thread of our own, so
    batches do not queue behind the rest of the app's database work."""
    global _pool
    if connection.vendor == "sqlite":
        return database_sync_to_async(_run_jobs)(jobs)
    if _pool is None:
        _pool = ThreadPoolExecutor(1, thread_name_prefix="turn-store")
    return asyncio.get_running_loop().run_in_executor(_pool, _run_in_pool_thread, jobs)


class _Batcher:
    """The queue of one event loop: jobs wait while a batch runs, then go together."""

    def __init__(self) -> None:
        self._pending: list[_Job] = []
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, fn: Callable[..., Job[_T]], kwargs: dict[str, Any]) -> _T:
        future: asyncio.Future[_T] = asyncio.get_running_loop().create_future()
        self._pending.append(_Job(fn, kwargs, future))
        self._start_batch()
        # A cancelled caller leaves its job to run (it may already be running); it just
        # stops waiting for the answer.
        return await future

    def _start_batch(self) -> None:
        if self._pending and not self._running:
            batch, self._pending = self._pending[:_MAX_BATCH], self._pending[_MAX_BATCH:]
            task = asyncio.create_task(self._run_batch(batch))
            self._running.add(task)
            task.add_done_callback(self._batch_done)

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._start_batch()

    async def _run_batch(self, batch: list[_Job]) -> None:
        try:
            results = await _in_database_thread([(job.fn, job.kwargs) for job in batch])
        except Exception as exc:  # a lone job failed, or the commit did
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        except BaseException:  # cancelled: the loop is shutting down
            for job in batch:
                job.future.cancel()
            raise
        for job, (ok, value) in zip(batch, results, strict=True):
            if job.future.done():
                continue
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)


_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = (
    weakref.WeakKeyDictionary()
)


async def batched(fn: Callable[..., Job[_T]], /, **kwargs: Any) -> _T:
    """The job ``fn(**kwargs)`` in the database thread, batched with the other turns'
    jobs of this event loop; its result."""
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = _Batcher()
    return await batcher.run(fn, kwargs)
