"""Everything a chat turn starts from: the conversation's choices turned into TurnRequest values.

Runs in a worker thread (it reads and writes the database) before the turn's task
starts; nothing here touches the event loop.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from chat_app.approvals import conversation_allowed_tools
from chat_app.db_batch import statements_pipelined
from chat_app.history_sql import run_events_insert
from chat_app.models import Conversation
from chat_app.schemas import TurnOptions
from chat_app.selectors import history_messages, model_key_problem, workspace_path_for
from chat_app.services import conversation_choose_options, run_start
from chat_app.turn_sql import conversation_history_rows_sent, conversation_load
from openprogram_site.api_errors import NotFoundError, UnprocessableError

__all__ = ["PreparedTurn", "turn_prepare", "turn_request_kwargs"]


@dataclasses.dataclass(frozen=True)
class PreparedTurn:
    run_id: int
    message_id: int
    title: str
    allowed_tools: frozenset[str]
    """Tools the owner allowed for the rest of this conversation (chat_app.approvals)."""
    request_kwargs: dict[str, Any]
    """TurnRequest keyword arguments, hooks excepted (the running turn supplies those)."""
    first_event: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The turn's ``user_message`` event, already in run history as ``seq`` 1 (written in
    this job): the turn relays it, with no history job of its own before its request."""
    budget_refusal: str | None = None
    """The owner's budget verdict as the run opened (``usage_app.services.budget_verdict``,
    nothing spent yet): the first model call's check, answered without another job."""


def turn_request_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    """Only the TurnRequest fields this framework version has (it grows optional ones)."""
    names = _request_fields()
    return {k: v for k, v in values.items() if k in names}


@functools.cache
def _request_fields() -> frozenset[str]:
    from openprogram.agent.events import TurnRequest

    return frozenset(f.name for f in dataclasses.fields(TurnRequest))


@transaction.atomic(savepoint=False)  # a batch's transaction (chat_app.db_batch) covers it
def turn_prepare(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None,
    may_abandon_orphans: bool,
    replaces: int | None = None,
) -> PreparedTurn:
    """Validate, remember the composer's choices, open the run and store the message.

    ``may_abandon_orphans``: the caller knows no process runs this conversation's turn
    (one process, nothing in its registry), so a run still marked running is a leftover
    of a server that stopped mid-turn and may be closed.
    """
    from tools_app.selectors import turn_resolution_inputs
    from usage_app.selectors import budget_and_spend_sent
    from usage_app.services import budget_verdict

    # Locked now: the run is opened under this lock (run_start), without loading it again.
    conversation = conversation_load(owner_id=user.pk, conversation_id=conversation_id, lock=True)
    if conversation is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    # Loaded by its owner: checking a chosen profile against it needs no query for the user.
    Conversation.owner.field.set_cached_value(conversation, user)
    # Saved by run_start's conversation UPDATE: one statement for the choices and the title.
    chosen = conversation_choose_options(conversation=conversation, options=options)
    inputs = turn_resolution_inputs(
        owner=user,
        profile_name=conversation.profile_name,
        agent_profile_id=conversation.agent_profile_id,
    )
    # An agent profile's model wins over the composer's; the picker shows it when chosen.
    model = inputs.pop("model", None) or conversation.model
    problem = model_key_problem(model)
    if problem:
        raise UnprocessableError(problem)
    turn_attended = conversation.attended if attended is None else attended
    run, message = run_start(
        conversation=conversation,
        text=text,
        attended=turn_attended,
        replaces=replaces,
        locked=True,
        abandon_running=may_abandon_orphans,
        model=model,
        conversation_fields=chosen,
    )
    # The turn's first event goes into run history with the run (seq 1): the turn only
    # relays it, so no history job of its own precedes its first model request.
    started = {
        "text": text,
        "message_id": message.pk,
        "title": conversation.title,
        "replaces": replaces,
    }
    # Two reads answered together with that write: on PostgreSQL one round trip
    # (db_batch's pipeline).
    with connection.cursor() as history_cursor, connection.cursor() as budget_cursor:
        with statements_pipelined():
            history_rows = conversation_history_rows_sent(
                history_cursor, conversation_id=conversation.pk, before=message
            )
            budget_spend = budget_and_spend_sent(
                budget_cursor, user_id=user.pk, exclude_run_id=run.pk
            )
            run_events_insert(run_id=run.pk, events=[(1, "user_message", started)])
        history = history_messages(history_rows())
        budget, recorded = budget_spend()
    refusal = budget_verdict(budget=budget, recorded=recorded, turn_cost=0.0)
    values = {
        **inputs,
        "text": text,
        "history": history,
        "model": model,
        "user_id": user.pk,
        "conversation_id": conversation.pk,
        "tools_on": conversation.tools_on,
        "web_search_on": conversation.web_search_on,
        "plan_mode": conversation.plan_mode,
        "source": "plan" if conversation.plan_mode else "web",
        "attended": turn_attended,
        "workspace": workspace_path_for(user=user),
        "state": {"todos": list(conversation.todos)},
        "approval_timeout": float(settings.APPROVAL_TIMEOUT_SECONDS),
        "can_use_context": {
            "user_id": user.pk,
            "username": user.get_username(),
            "is_staff": bool(user.is_staff),
        },
    }
    return PreparedTurn(
        run_id=run.pk,
        message_id=message.pk,
        title=conversation.title,
        allowed_tools=conversation_allowed_tools(conversation=conversation),
        request_kwargs=turn_request_kwargs(values),
        first_event={"type": "user_message", **started},
        budget_refusal=refusal,
    )
