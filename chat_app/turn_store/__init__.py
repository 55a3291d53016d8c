"""The turn store: every statement a chat turn runs, behind plain ``async def`` calls.

A turn, from a socket's connect to its stored reply, calls only these:

- :func:`connect`: a socket's ownership check and the catch-up of the latest run;
- :func:`start`: validate, open the run, store the message, read what the turn needs;
- :func:`record`: one step of the turn's events into run history (and the ledger);
- :func:`budget_refusal`: the owner's budget before a model call;
- :func:`renew_lease`: proof that this process still runs the turn;
- :func:`allow_tool`: remember an approval for the rest of the conversation;
- :func:`save_always_allow`: an approval card's "always allow", as the owner's rule;
- :func:`token_in_force`: an API turn's re-check of the token that started it;
- :func:`finish`: close the run and store the reply;
- :func:`close_orphans`: a Stop pressed when no turn of the conversation runs here.

Outside a turn's task (pages, the API, start-up, scripts) the same closing is
:func:`run_finish`, and the orphan sweeps :func:`run_expire_orphans`,
:func:`run_abandon_orphans` and :func:`runs_close_at_startup` use it.

**Why a store.** Under 100 simultaneous turns the fixed cost of each small database
job (a thread hop, two event-loop wake-ups, a transaction, the ORM's compilation of each
statement) was most of the server's CPU per turn. Here the jobs of all turns of a
process wait while a batch runs and then go together (``_batch``): one thread hop and
one transaction per batch, and on PostgreSQL one round trip per step of all of them
(psycopg's pipeline mode). Statements are plain SQL built once per shape from the
models' metadata (``core.model_sql``); a failing job fails alone, in its
caller. A caller awaits its own result, so "this event is in history before any tab
sees it" holds as if each job ran on its own.

**Adding a statement to a turn** (policy, audit, ...): put it in the job of the step it
belongs to, in that job's module here, never in a caller:

- a write: in a *sending* step (before the job's first ``yield``, or between a reading
  step and the next ``yield``), through ``model_sql`` (``insert_values`` of field
  values by attname, ``update_row``) so columns, defaults and conversions come from the
  model;
- a read: ``sent = send(sql, params)`` in a sending step, ``sent.one()`` /
  ``sent.all()`` after the next ``yield`` (a reading step), where the job may also
  raise (the batch then rolls back and the others run again without it);
- a new kind of job: a generator function in a module here, and an ``async def`` below
  that passes it to ``batched``. Nothing else changes; ``_batch``'s docstring has the
  rules for the steps.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from audit_app.recording import audit_calls_finished
from chat_app.approvals import conversation_allow_tool
from chat_app.models import Message, Run, RunStatus, lease_deadline
from chat_app.schemas import TurnOptions
from chat_app.turn_inputs import PreparedTurn
from chat_app.turn_store._batch import Job, batched
from chat_app.turn_store._history import finish_job, record_job
from chat_app.turn_store._history import run_close as run_finish
from chat_app.turn_store._orphans import (
    ORPHANED_RUN_ERROR,
    run_abandon_orphans,
    run_expire_orphans,
    runs_close_at_startup,
)
from chat_app.turn_store._reads import NOT_READ, budget_job, connect_job, token_job
from chat_app.turn_store._start import start_job
from core.api_errors import DomainError
from tools_app.policy.services import policy_user_rule_create

__all__ = [
    "NOT_READ",
    "ORPHANED_RUN_ERROR",
    "allow_tool",
    "budget_refusal",
    "close_orphans",
    "connect",
    "finish",
    "record",
    "renew_lease",
    "run_abandon_orphans",
    "run_expire_orphans",
    "run_finish",
    "runs_close_at_startup",
    "save_always_allow",
    "start",
    "token_in_force",
]

_log = logging.getLogger("chat_app.turn_store")


async def connect(
    *, owner_id: int, public_id: str | UUID, catch_up: bool, even_in_flight: bool = False
) -> tuple[int | None, Any]:
    """``(key, frame)``: the conversation's key if ``owner_id`` owns it (else
    ``(None, NOT_READ)``), and with ``catch_up`` the latest run's catch-up frame (None:
    no run yet). The frame is :data:`NOT_READ` without ``catch_up``, and while a turn of
    the conversation is in flight in this process unless ``even_in_flight``. A run left
    running that nothing runs any more is closed first, as orphaned."""
    return await batched(
        connect_job,
        owner_id=owner_id,
        public_id=public_id,
        catch_up=catch_up,
        even_in_flight=even_in_flight,
    )


async def start(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None,
    may_abandon_orphans: bool,
    replaces: int | None = None,
) -> PreparedTurn:
    """Open a turn of ``user``'s conversation: the composer's choices saved, the run and
    the message stored, the turn's first event in history, its inputs read. Raises
    NotFoundError (not the user's), ConflictError (a turn is running),
    UnprocessableError (a bad choice, a model without its key, a bad ``replaces``),
    ThrottledError (the user's turn limits). ``replaces``: the run an edit or a
    regeneration supersedes, with every later one."""
    return await batched(
        start_job,
        user=user,
        conversation_id=conversation_id,
        text=text,
        options=options,
        attended=attended,
        may_abandon_orphans=may_abandon_orphans,
        replaces=replaces,
    )


async def record(*, run_id: int, owner_id: int | None, events: list[dict[str, Any]]) -> None:
    """Append ``events`` (each with its ``seq``) to the run's history, with the rows
    that summarise them, (``owner_id``) a ledger row per ``model_call`` and an audit
    trail row per tool call that finished."""
    # The trail's facts are gathered here, once per step, not in the job: a batch that
    # fails runs its jobs again, and the facts of a finished call are handed out once.
    audited = audit_calls_finished(run_id=run_id, events=events)
    await batched(record_job, run_id=run_id, owner_id=owner_id, events=events, audited=audited)


async def budget_refusal(*, user_id: int, run_id: int | None, turn_cost: float) -> str | None:
    """Why no model may be called now (the owner's monthly budget is spent), or None;
    ``turn_cost``: what this run has spent, its own ledger rows left out of the sum."""
    return await batched(budget_job, user_id=user_id, run_id=run_id, turn_cost=turn_cost)


async def renew_lease(*, run_id: int) -> bool:
    """Extend a running run's lease; False when it is no longer running."""
    return await batched(_renew_job, run_id=run_id)


def _renew_job(*, run_id: int) -> Job[bool]:
    yield  # a row count is read: not in a pipeline
    running = Run.objects.filter(pk=run_id, status="running")
    return running.update(lease_until=lease_deadline()) > 0


async def allow_tool(*, conversation_id: int, owner_id: int, name: str) -> bool:
    """Remember ``name`` for the rest of the owner's conversation; False (nothing stored)
    for a tool that always asks, or a conversation not theirs."""
    return await batched(
        _allow_tool_job, conversation_id=conversation_id, owner_id=owner_id, name=name
    )


def _allow_tool_job(*, conversation_id: int, owner_id: int, name: str) -> Job[bool]:
    yield  # it reads the conversation under its lock first
    return conversation_allow_tool(conversation_id=conversation_id, owner_id=owner_id, name=name)


async def save_always_allow(*, owner_id: int, text: str) -> bool:
    """The owner's "always allow" from an approval card (``bash: git status``) saved as
    their own rule (``tools_app.policy.services.policy_user_rule_create``: it only
    relaxes what a user may relax); False when the rule is refused (logged) or the
    owner is gone. The approved call stays approved either way."""
    return await batched(_always_allow_job, owner_id=owner_id, text=text)


def _always_allow_job(*, owner_id: int, text: str) -> Job[bool]:
    yield  # it reads the owner and the always-ask marks before it writes
    owner = get_user_model().objects.filter(pk=owner_id).first()
    if owner is None:
        return False
    try:
        policy_user_rule_create(user=owner, text=text)
    except DomainError as exc:  # refused by its checks, before anything is written
        _log.warning("not saving always-allow %r for user %r: %s", text, owner_id, exc)
        return False
    return True


async def token_in_force(*, token_id: int) -> bool:
    """Is the API token still there (not revoked) and its user still active? One
    indexed statement; an API turn asks every few seconds while it runs."""
    return await batched(token_job, token_id=token_id)


async def close_orphans(
    *, conversation_id: int, every_running: bool, reason: str = ORPHANED_RUN_ERROR
) -> int:
    """Close the conversation's runs left running that nothing runs: with
    ``every_running`` (one process, no turn of it in this one) all of them, else those
    whose lease ran out (:func:`run_abandon_orphans`, :func:`run_expire_orphans`)."""
    return await batched(
        _close_orphans_job,
        conversation_id=conversation_id,
        every_running=every_running,
        reason=reason,
    )


def _close_orphans_job(*, conversation_id: int, every_running: bool, reason: str) -> Job[int]:
    yield  # each run's partial text is read before it is closed
    close = run_abandon_orphans if every_running else run_expire_orphans
    return close(conversation_id=conversation_id, reason=reason)


async def finish(
    *,
    run_id: int,
    status: RunStatus,
    text: str,
    usage: dict[str, Any] | None = None,
    error: str = "",
) -> Message:
    """Close the run and store the (possibly partial) reply; ``message.run`` is the run
    as it stands: one already closed (orphaned by another process) keeps its verdict."""
    return await batched(
        finish_job, run_id=run_id, status=status, text=text, usage=usage, error=error
    )
