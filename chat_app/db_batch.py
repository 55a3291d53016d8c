"""Group commit for the running turns' small database jobs: one thread hop per batch.

Every running turn writes its events, checks its owner's budget and renews its lease
with short database jobs. Sent one by one through Channels' single database thread,
each job paid for a thread hop, two event-loop wake-ups, a fresh connection (Django
closes it after every ``database_sync_to_async`` call) and a commit: under 100
simultaneous turns that overhead was most of the server's CPU. Here the jobs of all
turns of a process queue up while a batch runs, and the next batch runs them together:
one hop to the same database thread, one transaction (a failing job rolls back only
its own writes and raises in its own caller).

A job's caller still awaits its own result, so what a turn relies on ("this event is
in history before any tab sees it") holds exactly as before.

One batch runs at a time, whatever the database. PostgreSQL once had four in flight
(each its own thread and connection, to overlap round trips); under 100 simultaneous
turns on 2 cores one did better (``bench_concurrency``, back to back: CPU per turn 21 →
17 ms, p95 1.8 → 1.6 s): fewer, larger transactions, no threads contending for the GIL.

On PostgreSQL that one thread's time is mostly waiting: every statement is a round trip
(then a wait for the GIL). Jobs marked :func:`write_only` (a turn's history steps) read
nothing back, so a batch runs them first, all in one pipeline
(:func:`statements_pipelined`): one round trip for all of them instead of one or more
each. If anything in that pipeline fails, the batch falls back as for any failure.
Jobs marked :func:`read_after_send` (a turn's budget check before a model call) send
their statement into that same pipeline and read the answer after it: one round trip
for a batch's writes and checks together. A reading function that needs a second,
dependent statement (a socket's login: the session row names the user) returns
:class:`SendMore`: the batch sends all such second statements in one more pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from django.db import close_old_connections, connection, transaction

__all__ = [
    "SendMore",
    "answered",
    "read_after_send",
    "run_batched",
    "statements_pipelined",
    "write_only",
]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_MAX_BATCH = 200
"""Jobs per transaction: a long queue is worked off in slices, so no batch holds the
database's write lock for long."""


@dataclass
class _Job:
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    future: asyncio.Future[Any]


_WRITE_ONLY = "_db_batch_write_only"


def write_only(fn: _F) -> _F:
    """Mark a job function whose statements all stay inside :func:`statements_pipelined`
    rules (nothing read back: no row counts, no ids, no SELECTs) and that returns None:
    a batch sends consecutive such jobs together."""
    setattr(fn, _WRITE_ONLY, True)
    return fn


_READ_AFTER_SEND = "_db_batch_read_after_send"


def read_after_send(fn: Callable[..., Callable[[], _T]]) -> Callable[..., Callable[[], _T]]:
    """Mark a job function that only sends its statements (inside the
    :func:`statements_pipelined` rules) and returns a function reading their answers:
    a batch sends such jobs with its writes, in one pipeline, and reads after it. The
    job's result is what that function returns."""
    setattr(fn, _READ_AFTER_SEND, True)
    return fn


@dataclass(frozen=True)
class SendMore:
    """What a :func:`read_after_send` job's reading function returns when it has a
    dependent statement to send: ``send()`` sends it (inside the
    :func:`statements_pipelined` rules) and returns the function reading its answer,
    which gives the job's result (or another ``SendMore``). A batch calls the ``send``
    of all its jobs that returned one inside one pipeline, then their readers."""

    send: Callable[[], Callable[[], Any]]


@contextlib.contextmanager
def statements_pipelined() -> Iterator[None]:
    """PostgreSQL: the block's statements go out together and are answered at its end
    (one round trip); other databases run them one by one as usual. Inside a pipelined
    block already, it adds nothing (the outer block's end answers all).

    Only for statements nobody reads a result of: in pipeline mode a cursor's
    ``rowcount`` and rows are not there until the block ends (an ORM ``save()`` that
    checks its row count, or a ``create()`` that reads its id, must stay outside). A
    failing statement raises at the latest when the block ends, and the ones after it
    are not run.
    """
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    raw = connection.connection
    if raw.pgconn.pipeline_status:  # an outer block answers for these statements
        yield
        return
    with raw.pipeline():
        yield


def _run_in_order(jobs: list[tuple[Callable[..., Any], dict[str, Any]]]) -> list[Any]:
    """Each job's result, in its job's place: the write-only jobs first, pipelined
    together, then the others in order.

    Moving the writes ahead is safe because every caller awaits its job before it
    submits another: two jobs in one batch were pending at the same time, so neither
    caller can rely on the other's effects, and any order of them is one the callers
    could have seen. The write-only jobs keep their own order (a turn's history steps).
    Left where they came, a turn's history step and another turn's budget check or
    start alternate in a busy batch, and each write went out alone: a round trip each
    on PostgreSQL instead of one for all.
    """
    results: list[Any] = [None] * len(jobs)
    writes = [i for i, (fn, _) in enumerate(jobs) if _is_write_only(fn)]
    sends = [i for i, (fn, _) in enumerate(jobs) if _reads_after_send(fn)]
    first = set(writes) | set(sends)
    others = [i for i in range(len(jobs)) if i not in first]
    if connection.vendor == "postgresql":
        _send_then_read(jobs, writes, sends, results)
    else:
        # No pipelines: nothing is gained by sending ahead, and a statement whose answer
        # waits keeps its cursor busy (SQLite then compiles the next of its kind anew:
        # 100 starts sent ahead cost ~30 % more CPU). Each job runs to its end in turn.
        for i in writes + sends:
            results[i] = _run_job(*jobs[i])
    for i in others:
        fn, kwargs = jobs[i]
        results[i] = fn(**kwargs)
    return results


def _send_then_read(
    jobs: list[tuple[Callable[..., Any], dict[str, Any]]],
    writes: list[int],
    sends: list[int],
    results: list[Any],
) -> None:
    """PostgreSQL: the write-only jobs and every sending job's statements in one
    pipeline, then the answers read in job order; the further statements of those that
    send more (:class:`SendMore`) in one more pipeline each round."""
    # A lone job is left to its own blocks: a failure it handles itself (a savepoint it
    # rolls back to) must surface inside it, not at the end of an outer pipeline.
    with statements_pipelined() if len(writes) + len(sends) > 1 else nullcontext():
        for i in writes + sends:
            fn, kwargs = jobs[i]
            results[i] = fn(**kwargs)
    for i in sends:
        results[i] = results[i]()
    more = [i for i in sends if isinstance(results[i], SendMore)]
    while more:
        with statements_pipelined() if len(more) > 1 else nullcontext():
            for i in more:
                results[i] = results[i].send()
        for i in more:
            results[i] = results[i]()
        more = [i for i in more if isinstance(results[i], SendMore)]


def _is_write_only(fn: Callable[..., Any]) -> bool:
    return getattr(fn, _WRITE_ONLY, False)


def _reads_after_send(fn: Callable[..., Any]) -> bool:
    return getattr(fn, _READ_AFTER_SEND, False)


def _run_job(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """One job on its own: a sending job's answer read at once."""
    result = fn(**kwargs)
    return answered(result) if _reads_after_send(fn) else result


def answered(read: Callable[[], Any]) -> Any:
    """What a :func:`read_after_send` job's reading function gives, here and now: its
    answers read, and any statements it sends more (:class:`SendMore`) sent and read in
    turn. For calling such a job outside a batch."""
    result = read()
    while isinstance(result, SendMore):
        result = result.send()()
    return result


def _run_jobs(jobs: list[tuple[Callable[..., Any], dict[str, Any]]]) -> list[tuple[bool, Any]]:
    """Run jobs in one transaction; ``(ok, result or exception)`` for each.

    If one fails, the whole batch is rolled back and each job runs again in a
    transaction of its own, so only the failing one fails (and raises in its caller).
    Failures are rare; a savepoint per job would cost two statements each time.
    """
    try:
        with transaction.atomic():
            return [(True, result) for result in _run_in_order(jobs)]
    except Exception:
        if len(jobs) == 1:
            raise
    results: list[tuple[bool, Any]] = []
    for fn, kwargs in jobs:
        try:
            with transaction.atomic():
                results.append((True, _run_job(fn, kwargs)))
        except Exception as exc:
            results.append((False, exc))
    return results


def _run_in_pool_thread(jobs: list[tuple[Callable[..., Any], dict[str, Any]]]) -> Any:
    # What Channels' database_sync_to_async does around a call, in a thread of our own.
    close_old_connections()
    try:
        return _run_jobs(jobs)
    finally:
        close_old_connections()


_pool: ThreadPoolExecutor | None = None


def _run_batch_in_thread(
    jobs: list[tuple[Callable[..., Any], dict[str, Any]]],
) -> Awaitable[list[tuple[bool, Any]]]:
    """SQLite: Channels' database thread (one writer suits it, and its connection is
    shared with the rest of the app). Client-server databases: a thread of our own, so
    batches do not queue behind the sockets' session and user look-ups, which use
    Channels' thread."""
    global _pool
    if connection.vendor == "sqlite":
        return database_sync_to_async(_run_jobs)(jobs)
    if _pool is None:
        _pool = ThreadPoolExecutor(1, thread_name_prefix="db-batch")
    return asyncio.get_running_loop().run_in_executor(_pool, _run_in_pool_thread, jobs)


class _Batcher:
    """The queue of one event loop: jobs wait while a batch runs, then go together."""

    def __init__(self) -> None:
        self._pending: list[_Job] = []
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, fn: Callable[..., _T], kwargs: dict[str, Any]) -> _T:
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
            results = await _run_batch_in_thread([(job.fn, job.kwargs) for job in batch])
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


async def run_batched(fn: Callable[..., _T], /, **kwargs: Any) -> _T:
    """``fn(**kwargs)`` in the database thread, batched with other turns' jobs; its result."""
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = _Batcher()
    return await batcher.run(fn, kwargs)
