"""A run's start and end: one running turn per conversation, leases, orphaned runs.

``run_start`` opens a run under the conversation's lock; ``run_finish`` closes it with
the reply; a run whose server is gone (its lease lapsed, or one process found nothing
running it) is closed as orphaned, keeping what it had streamed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from chat_app.db_batch import read_after_send, statements_pipelined
from chat_app.history_sql import assistant_message_insert
from chat_app.models import Conversation, Message, Run, RunEvent, RunStatus, lease_deadline
from chat_app.titles import title_from_message
from chat_app.turn_limits import turn_start_allow_sent
from chat_app.turn_sql import (
    message_insert_sent,
    row_update,
    run_and_message_keys_sent,
    run_for_finish_sent,
    run_insert,
    runs_running_sent,
    tool_calls_close_open,
)
from core.api_errors import ConflictError, NotFoundError, UnprocessableError

__all__ = [
    "ORPHANED_RUN_ERROR",
    "run_abandon_orphans",
    "run_expire_orphans",
    "run_finish",
    "run_finish_sent",
    "run_open_sent",
    "run_renew_lease",
    "run_start",
    "run_start_check",
    "runs_close_at_startup",
]

ORPHANED_RUN_ERROR = "the server running this turn stopped"


def run_start(
    *, conversation: Conversation, text: str, attended: bool, abandon_running: bool = False
) -> tuple[Run, Message]:
    """Open a run and store the user's message, on their own (scripts, tests); one running
    turn per conversation.

    ``abandon_running``: the caller knows no process runs this conversation's turn (one
    process, nothing in its registry), so a run still marked running is a leftover of a
    server that stopped mid-turn: it is closed as orphaned, whatever its lease says.

    A turn's start (``chat_app.turn_inputs.turn_prepare_sent``) runs the same steps as a
    batch job, its reads and writes sent with other starts': :func:`run_start_check` on
    what it read under the conversation's lock, then :func:`run_open_sent`.
    """
    # No savepoint inside a caller's transaction (a savepoint is two more round trips on
    # PostgreSQL): whatever this raises fails the caller's transaction as a whole.
    with transaction.atomic(savepoint=False):
        locked = _conversation_lock(conversation.pk)
        keys = run_and_message_keys_sent()
        running = runs_running_sent(conversation_id=locked.pk)
        run_start_check(
            conversation_id=locked.pk,
            running=running(),
            abandon_running=abandon_running,
            replaces=None,
        )
        with statements_pipelined():
            run, message, allowed = run_open_sent(
                conversation=locked,
                text=text,
                attended=attended,
                model=None,
                conversation_fields=(),
                keys=keys(),
            )
        allowed()
    conversation.title = locked.title
    return run, message


def run_start_check(
    *,
    conversation_id: int,
    running: list[tuple[int, Any]],
    abandon_running: bool,
    replaces: int | None,
) -> None:
    """Before a run opens, under the conversation's lock, with ``running`` its runs still
    marked running (``turn_sql.runs_running_sent``, read under that lock): close the
    ones whose lease lapsed (so two processes cannot both take over a dead turn), refuse
    if one still holds (ConflictError), and mark ``replaces`` and every later run
    superseded."""
    now = timezone.now()
    lapsed = [pk for pk, until in running if abandon_running or until is None or until < now]
    _close_run_ids(lapsed, reason=ORPHANED_RUN_ERROR)
    if len(lapsed) < len(running):
        raise ConflictError("a turn is already running in this conversation; stop it first")
    if replaces is not None:
        runs = Run.objects.filter(conversation_id=conversation_id)
        replaced = runs.filter(pk=replaces, superseded=False).first()
        if replaced is None:
            raise UnprocessableError(f"run {replaces!r} is not a current run of this chat")
        runs.filter(pk__gte=replaced.pk).update(superseded=True)


def run_open_sent(
    *,
    conversation: Conversation,
    text: str,
    attended: bool,
    model: str | None,
    conversation_fields: Sequence[str],
    keys: tuple[int, int] | None,
) -> tuple[Run, Message, Callable[[], None]]:
    """Send the run's INSERT, the owner's turn limits (``turn_limits``), the message's
    INSERT and the conversation's one UPDATE; the run, the message, and the limits'
    verdict to call after the block, which raises ThrottledError (the caller's
    transaction then rolls back: the run was never open).

    ``conversation``: loaded with its lock in this transaction. ``model``: the run's
    model when it is not the conversation's (an agent profile's).
    ``conversation_fields``: its fields changed but not saved yet (the composer's
    choices, ``conversation_choose_options``), written in the one UPDATE.

    ``keys``: the run's and the message's keys taken beforehand
    (``turn_sql.run_and_message_keys_sent``): on PostgreSQL nothing here waits for an
    answer, so all of it, and what names the run or the message, goes out in one
    pipeline. Without them (SQLite) each INSERT returns its key at once. The limits are
    counted after the run's INSERT, leaving it out: the verdict before it, with every run
    an earlier start of the same transaction opened counted.
    """
    # Plain SQL from plain values (chat_app.turn_sql): the rows Run(...) and
    # Message(...) would store, without building and converting them field by field.
    run = run_insert(
        conversation_id=conversation.pk,
        model=model or conversation.model,
        profile_name=conversation.profile_name,
        attended=attended,
        options={
            "tools_on": conversation.tools_on,
            "web_search_on": conversation.web_search_on,
            "plan_mode": conversation.plan_mode,
            "agent_profile": conversation.agent_profile_id,
        },
        started=timezone.now(),
        key=None if keys is None else keys[0],
    )
    allowed = turn_start_allow_sent(owner_id=conversation.owner_id, exclude_run_id=run.pk)
    if not conversation.title:
        conversation.title = title_from_message(text)
    chosen = {field: getattr(conversation, field) for field in conversation_fields}
    with connection.cursor() as cursor:
        # With its key: nothing read back. Without (no pipelines there): read at once.
        message = message_insert_sent(
            cursor,
            conversation_id=conversation.pk,
            run_id=run.pk,
            role="user",
            text=text,
            created=timezone.now(),
            key=None if keys is None else keys[1],
        )()
    row_update(
        Conversation,
        pk=conversation.pk,
        values={**chosen, "title": conversation.title, "updated": timezone.now()},
    )
    return run, message, allowed


def _conversation_lock(conversation_id: int) -> Conversation:
    locked = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
    if locked is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    return locked


def run_finish(
    *,
    run_id: int,
    status: RunStatus,
    text: str,
    usage: dict[str, Any] | None = None,
    error: str = "",
) -> Message:
    """Close a run and store the assistant's (possibly partial) reply.

    A run already closed stays as it was (a turn that lost its lease and was closed as
    orphaned by another process must not reopen it): its reply is returned instead.
    """
    with transaction.atomic(savepoint=False):  # a batch's transaction covers it
        return run_finish_sent(run_id=run_id, status=status, text=text, usage=usage, error=error)()


@read_after_send
def run_finish_sent(
    *,
    run_id: int,
    status: RunStatus,
    text: str,
    usage: dict[str, Any] | None = None,
    error: str = "",
) -> Callable[[], Message]:
    """:func:`run_finish` as a batch job (``chat_app.db_batch``), inside the batch's
    transaction: the run's locked read is sent now (on PostgreSQL in the batch's
    pipeline, with the turns' history writes) and the returned function closes the run."""
    # Only what is read here: the run's JSON fields (tools, explain) cost to decode.
    locked = run_for_finish_sent(run_id=run_id)

    def finish() -> Message:
        run = locked()
        if run is None:
            raise Run.DoesNotExist(f"run {run_id!r} does not exist")
        if run.status != "running":
            closed = run.messages.filter(role="assistant").order_by("-id").first()
            if closed is not None:
                closed.run = run  # callers read the verdict that stands from message.run
                return closed
            return Message.objects.create(
                conversation_id=run.conversation_id, role="assistant", text=run.text, run=run
            )
        now = timezone.now()
        closed = {"status": status, "text": text, "usage": usage or {}, "finished": now}
        if error:
            closed["error"] = error
        # Only the reply's id is read back, after the block: one round trip on PostgreSQL.
        with connection.cursor() as cursor:
            with statements_pipelined():
                # Plain SQL (chat_app.turn_sql): the same statements, not compiled each time.
                row_update(Run, pk=run_id, values={**closed, "lease_until": None})
                # Calls still open when the turn ended (stopped, errored) are closed with it.
                tool_calls_close_open(
                    run_id=run_id,
                    status="stopped" if status == "stopped" else "error",
                    preview=f"turn {status}",
                )
                # By id: loading the conversation to save one field cost a query and a model.
                row_update(Conversation, pk=run.conversation_id, values={"updated": now})
                stored = assistant_message_insert(
                    cursor,
                    conversation_id=run.conversation_id,
                    run_id=run_id,
                    text=text,
                    created=now,
                )
            message = stored()
        for name, value in closed.items():
            setattr(run, name, value)
        run.lease_until = None
        message.run = run  # callers read the verdict from message.run
        return message

    return finish


def run_renew_lease(*, run_id: int) -> bool:
    """Extend a running run's lease (one UPDATE); False when it is no longer running."""
    renewed = Run.objects.filter(pk=run_id, status="running").update(lease_until=lease_deadline())
    return renewed > 0


def run_expire_orphans(*, conversation_id: int, reason: str = ORPHANED_RUN_ERROR) -> int:
    """Close the conversation's running runs whose lease ran out: their server is gone.

    Cheap when nothing is orphaned (one indexed query), so every touch of a
    conversation (a message, a page load, a socket's catch-up) may call it.
    """
    running = Run.objects.filter(conversation_id=conversation_id, status="running")
    return _close_runs(_lease_lapsed(running), reason=reason)


def _lease_lapsed(runs: QuerySet[Run]) -> QuerySet[Run]:
    return runs.filter(Q(lease_until__lt=timezone.now()) | Q(lease_until__isnull=True))


def _close_runs(runs: QuerySet[Run], *, reason: str) -> int:
    """Close ``runs`` as errors with ``reason``, keeping the text each had streamed."""
    return _close_run_ids(list(runs.values_list("pk", flat=True)), reason=reason)


def _close_run_ids(run_ids: list[int], *, reason: str) -> int:
    for run_id in run_ids:
        run_finish(run_id=run_id, status="error", text=_partial_text(run_id), error=reason)
    return len(run_ids)


def runs_close_at_startup(*, single_process: bool) -> int:
    """Close the runs a previous server left marked running; returns how many.

    With one process (the in-memory channel layer) nobody else can be running a turn, so
    every running run is a leftover; with several, only those whose lease lapsed are.
    """
    running = Run.objects.filter(status="running")
    return _close_runs(
        running if single_process else _lease_lapsed(running), reason=ORPHANED_RUN_ERROR
    )


def _partial_text(run_id: int) -> str:
    # What the dead turn had streamed is kept, as a Stop would keep it.
    deltas = RunEvent.objects.filter(run_id=run_id, type="text_delta").order_by("seq")
    return "".join(
        str(payload.get("text", "")) for payload in deltas.values_list("payload", flat=True)
    )


def run_abandon_orphans(*, conversation_id: int, reason: str = ORPHANED_RUN_ERROR) -> int:
    """Close runs marked running that no process owns any more (single-process layer)."""
    running = Run.objects.filter(conversation_id=conversation_id, status="running")
    return _close_runs(running, reason=reason)
