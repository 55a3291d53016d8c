"""Everything a chat turn starts from: the conversation's choices turned into TurnRequest values.

Runs in a worker thread (it reads and writes the database) before the turn's task
starts; nothing here touches the event loop.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from chat_app.approvals import conversation_allowed_tools
from chat_app.db_batch import SendMore, read_after_send, statements_pipelined
from chat_app.history_sql import run_events_insert
from chat_app.models import Conversation
from chat_app.run_lifecycle import run_open_sent, run_start_check
from chat_app.schemas import TurnOptions
from chat_app.selectors import history_messages, model_key_problem, workspace_path_for
from chat_app.services import conversation_choose_options
from chat_app.turn_sql import (
    conversation_history_rows_sent,
    conversation_load_sent,
    run_and_message_keys_sent,
    runs_running_sent,
)
from core.api_errors import NotFoundError, UnprocessableError

__all__ = ["PreparedTurn", "turn_prepare_sent", "turn_request_kwargs"]


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


@read_after_send
def turn_prepare_sent(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None,
    may_abandon_orphans: bool,
    replaces: int | None = None,
) -> Callable[[], SendMore]:
    """Validate, remember the composer's choices, open the run and store the message:
    a batch job (``chat_app.db_batch``; ``db_batch.answered`` runs it on its own) in
    two sends, so a batch of starts costs PostgreSQL two round trips, not seven per
    start:

    1. the conversation, locked, and what is read under the lock: its running runs, the
       owner's profiles and the global disables, the team policy reaching the owner
       (``tools_app.policy``), and (PostgreSQL) the keys the run and
       the message will have;
    2. after the checks on those (in the returned function): the run and the message
       INSERTs, the owner's turn limits (counted after the run's INSERT, leaving it
       out), the conversation's UPDATE, the history and budget reads and the turn's
       first event.

    ``may_abandon_orphans``: the caller knows no process runs this conversation's turn
    (one process, nothing in its registry), so a run still marked running is a leftover
    of a server that stopped mid-turn and may be closed.

    A batch never holds two starts of one conversation: ``turns.turn_start`` holds the
    conversation's slot in its process before it queues the job, and another process
    waits on the conversation's lock. Two starts of one owner may share a batch: the
    second one's limits count the first one's run (in order, in one transaction).
    """
    from tools_app.policy.selectors import policy_for_user_sent
    from tools_app.selectors import profiles_and_disabled_sent

    with statements_pipelined():
        # The lock first: the runs after it are read under it.
        loaded = conversation_load_sent(
            owner_id=user.pk, conversation_id=conversation_id, lock=True
        )
        running = runs_running_sent(conversation_id=conversation_id)
        profiles = profiles_and_disabled_sent(owner_id=user.pk)
        policy = policy_for_user_sent(user_id=user.pk)
        keys = run_and_message_keys_sent()

    def checked() -> SendMore:
        conversation, running_runs = loaded(), running()
        profiles_read, policy_read, keys_taken = profiles(), policy(), keys()
        if conversation is None:
            raise NotFoundError(f"conversation {conversation_id!r} not found")
        return _start_checked(
            user=user,
            conversation=conversation,
            running=running_runs,
            profiles_and_disabled=profiles_read,
            policy=policy_read,
            keys=keys_taken,
            text=text,
            options=options,
            attended=attended,
            may_abandon_orphans=may_abandon_orphans,
            replaces=replaces,
        )

    return checked


def _start_checked(
    *,
    user: AbstractBaseUser,
    conversation: Conversation,
    running: list[tuple[int, Any]],
    profiles_and_disabled: tuple[dict[str, list[str]], dict[str, str]],
    policy: Any,
    keys: tuple[int, int] | None,
    text: str,
    options: TurnOptions,
    attended: bool | None,
    may_abandon_orphans: bool,
    replaces: int | None,
) -> SendMore:
    """:func:`turn_prepare_sent`'s checks on what it read (outside any pipeline: a
    lapsed run's closing and an edit's superseding read and write as they go); its
    second send."""
    from tools_app.selectors import turn_resolution_inputs

    # Loaded by its owner: checking a chosen profile against it needs no query for the user.
    Conversation.owner.field.set_cached_value(conversation, user)
    # Saved by the run's opening: one conversation UPDATE for the choices and the title.
    chosen = conversation_choose_options(conversation=conversation, options=options)
    inputs = turn_resolution_inputs(
        owner=user,
        profile_name=conversation.profile_name,
        agent_profile_id=conversation.agent_profile_id,
        profiles_and_disabled=profiles_and_disabled,
        policy=policy,
    )
    # An agent profile's model wins over the composer's; the picker shows it when chosen.
    model = inputs.pop("model", None) or conversation.model
    problem = model_key_problem(model)
    if problem:
        raise UnprocessableError(problem)
    turn_attended = conversation.attended if attended is None else attended
    run_start_check(
        conversation_id=conversation.pk,
        running=running,
        abandon_running=may_abandon_orphans,
        replaces=replaces,
    )
    return SendMore(
        partial(
            _start_sent,
            user=user,
            conversation=conversation,
            inputs=inputs,
            model=model,
            attended=turn_attended,
            chosen=chosen,
            keys=keys,
            text=text,
            replaces=replaces,
        )
    )


def _start_sent(
    *,
    user: AbstractBaseUser,
    conversation: Conversation,
    inputs: dict[str, Any],
    model: str,
    attended: bool,
    chosen: list[str],
    keys: tuple[int, int] | None,
    text: str,
    replaces: int | None,
) -> Callable[[], PreparedTurn]:
    """:func:`turn_prepare_sent`'s second send; the returned function reads the answers
    and gives the prepared turn."""
    from usage_app.selectors import budget_and_spend_sent
    from usage_app.services import budget_verdict

    history_cursor, budget_cursor = connection.cursor(), connection.cursor()
    try:
        with statements_pipelined():
            run, message, allowed = run_open_sent(
                conversation=conversation,
                text=text,
                attended=attended,
                model=model,
                conversation_fields=chosen,
                keys=keys,
            )
            # The turn's first event goes into run history with the run (seq 1): the
            # turn only relays it, so no history job of its own precedes its first
            # model request.
            started = {
                "text": text,
                "message_id": message.pk,
                "title": conversation.title,
                "replaces": replaces,
            }
            history_rows = conversation_history_rows_sent(
                history_cursor, conversation_id=conversation.pk, before=message
            )
            budget_spend = budget_and_spend_sent(
                budget_cursor, user_id=user.pk, exclude_run_id=run.pk
            )
            run_events_insert(run_id=run.pk, events=[(1, "user_message", started)])
    except BaseException:
        history_cursor.close()
        budget_cursor.close()
        raise

    def prepared() -> PreparedTurn:
        try:
            history = history_messages(history_rows())
            budget, recorded = budget_spend()
        finally:
            history_cursor.close()
            budget_cursor.close()
        allowed()
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
            "attended": attended,
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
            budget_refusal=budget_verdict(budget=budget, recorded=recorded, turn_cost=0.0),
        )

    return prepared
