"""The turn store's start of a turn: validate, remember the composer's choices, open the
run, store the message, and read everything the turn starts from.

Two sending steps, so on PostgreSQL a batch of starts costs two round trips:

1. the conversation, locked, and what is read under the lock: its running runs, the
   owner's profiles and the global disables, the team policy that reaches the owner
   (``tools_app.policy``), and (PostgreSQL) the keys the run and the message will have,
   taken from their sequences so nothing later waits for an INSERT;
2. after the checks on those: the run and the message INSERTs, the owner's turn limits
   (counted after the run's INSERT, leaving it out), the conversation's one UPDATE (the
   composer's choices, the title), the history and budget reads and the turn's first
   event (its ``user_message``, ``seq`` 1).

A batch never holds two starts of one conversation: ``turns.turn_start`` holds the
conversation's slot in its process before it queues the job, and another process waits
on the conversation's lock. Two starts of one owner may share a batch: the second one's
limits count the first one's run (in order, in one transaction).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.utils import timezone

from chat_app.approvals import conversation_allowed_tools
from chat_app.composer_choices import conversation_choose_options
from chat_app.models import Conversation, Message, Run, RunEvent
from chat_app.schemas import TurnOptions
from chat_app.selectors import (
    conversation_history_statement,
    history_messages,
    model_key_problem,
    workspace_path_for,
)
from chat_app.titles import title_from_message
from chat_app.turn_inputs import PreparedTurn, turn_request_kwargs
from chat_app.turn_limits import limits_on, owner_turns_statement, turn_start_verdict
from chat_app.turn_store._batch import Job, send
from chat_app.turn_store._orphans import ORPHANED_RUN_ERROR, close_run_ids
from core.api_errors import ConflictError, NotFoundError, UnprocessableError
from core.model_sql import (
    column,
    insert_returning,
    insert_values,
    instance_from_row,
    key_read,
    python_value,
    table,
    update_row,
)
from tools_app.policy.selectors import policy_for_user_statement, policy_from_rows
from tools_app.selectors import (
    profiles_and_disabled_rows,
    profiles_and_disabled_statement,
    turn_resolution_inputs,
)
from usage_app.selectors import budget_and_spend_row, budget_and_spend_statement
from usage_app.services import budget_verdict

__all__ = ["start_job"]


def start_job(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None,
    may_abandon_orphans: bool,
    replaces: int | None = None,
) -> Job[PreparedTurn]:
    """The prepared turn (module docstring). ``may_abandon_orphans``: the caller knows
    no process runs this conversation's turn (one process, nothing in its registry), so
    a run still marked running is a leftover of a server that stopped mid-turn."""
    # The lock first: the runs after it are read under it.
    loaded = send(_conversation_sql(), [user.pk, conversation_id])
    running = send(_running_sql(), [conversation_id, "running"])
    profiles = send(*profiles_and_disabled_statement(owner_id=user.pk))
    policy = send(*policy_for_user_statement(user_id=user.pk))
    keys = send(_keys_sql(), []) if connection.vendor == "postgresql" else None
    yield
    row, running_runs = loaded.one(), running.all()
    profiles_read = profiles_and_disabled_rows(profiles.all())
    policy_read = policy_from_rows(policy.all())
    run_key, message_key = keys.one() if keys is not None else (None, None)
    if row is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    conversation = instance_from_row(Conversation, Conversation._meta.concrete_fields, row)
    conversation.owner = user  # loaded by its owner: checks against it need no query
    # Saved by the run's opening: one conversation UPDATE for the choices and the title.
    chosen = conversation_choose_options(conversation=conversation, options=options)
    inputs = turn_resolution_inputs(
        owner=user,
        profile_name=conversation.profile_name,
        agent_profile_id=conversation.agent_profile_id,
        profiles_read=profiles_read,
        policy=policy_read,
    )
    # An agent profile's model wins over the composer's; the picker shows it when chosen.
    model = inputs.pop("model", None) or conversation.model
    problem = model_key_problem(model)
    if problem:
        raise UnprocessableError(problem)
    turn_attended = conversation.attended if attended is None else attended
    _before_opening(
        conversation_id=conversation.pk,
        running=running_runs,
        abandon_running=may_abandon_orphans,
        replaces=replaces,
    )
    yield
    now = timezone.now()
    run_id = _insert(
        Run,
        run_key,
        {
            "conversation_id": conversation.pk,
            "model": model,
            "profile_name": conversation.profile_name,
            "attended": turn_attended,
            "options": {
                "tools_on": conversation.tools_on,
                "web_search_on": conversation.web_search_on,
                "plan_mode": conversation.plan_mode,
                "agent_profile": conversation.agent_profile_id,
            },
        },
    )
    limits = (
        send(*owner_turns_statement(owner_id=user.pk, now=now, exclude_run_id=run_id))
        if limits_on()
        else None
    )
    if not conversation.title:
        conversation.title = title_from_message(text)
    message_id = _insert(
        Message,
        message_key,
        {
            "conversation_id": conversation.pk,
            "run_id": run_id,
            "role": "user",
            "text": text,
            "created": now,
        },
    )
    changed = {name: getattr(conversation, name) for name in chosen}
    update_row(
        Conversation,
        pk=conversation.pk,
        values={**changed, "title": conversation.title, "updated": now},
    )
    history = send(
        *conversation_history_statement(
            conversation_id=conversation.pk, before_id=message_id, before_created=now
        )
    )
    budget = send(*budget_and_spend_statement(user_id=user.pk, exclude_run_id=run_id))
    # The turn's first event goes into run history with the run (seq 1): the turn only
    # relays it, so no history job of its own precedes its first model request.
    started = {"text": text, "message_id": message_id, "title": conversation.title}
    started["replaces"] = replaces
    insert_values(
        RunEvent, [{"run_id": run_id, "seq": 1, "type": "user_message", "payload": started}]
    )
    yield
    counts = limits.one() if limits is not None else None
    messages = history_messages(history.all())
    spend = budget_and_spend_row(budget.one())
    if counts is not None:
        turn_start_verdict(counts, now=now)  # raises: the batch rolls back, run and all
    values = {
        **inputs,
        "text": text,
        "history": messages,
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
        run_id=run_id,
        message_id=message_id,
        title=conversation.title,
        allowed_tools=conversation_allowed_tools(conversation=conversation),
        request_kwargs=turn_request_kwargs(values),
        first_event={"type": "user_message", **started},
        budget_refusal=budget_verdict(budget=spend[0], recorded=spend[1], turn_cost=0.0),
    )


def _insert(model: type[Run] | type[Message], key: int | None, values: dict[str, Any]) -> int:
    """INSERT a row whose ``key`` was taken beforehand (PostgreSQL: nothing read back, so
    it goes out in the pipeline) or, with ``key`` None, is read back at once (elsewhere:
    no pipeline); the row's key."""
    with connection.cursor() as cursor:
        if key is not None:
            return insert_returning(cursor, model, {"id": key, **values})
        insert_returning(cursor, model, values)
        return key_read(cursor, model)


def _before_opening(
    *,
    conversation_id: int,
    running: list[tuple[int, Any]],
    abandon_running: bool,
    replaces: int | None,
) -> None:
    """Under the conversation's lock, with ``running`` its runs still marked running: close
    the ones whose lease lapsed (so two processes cannot both take over a dead turn),
    refuse if one still holds (ConflictError), and mark ``replaces`` and every later run
    superseded."""
    now = timezone.now()
    lease = Run._meta.get_field("lease_until")
    lapsed = [
        pk
        for pk, until in running
        if abandon_running or until is None or python_value(lease, until) < now
    ]
    close_run_ids(lapsed, reason=ORPHANED_RUN_ERROR)
    if len(lapsed) < len(running):
        raise ConflictError("a turn is already running in this conversation; stop it first")
    if replaces is not None:
        runs = Run.objects.filter(conversation_id=conversation_id)
        replaced = runs.filter(pk=replaces, superseded=False).first()
        if replaced is None:
            raise UnprocessableError(f"run {replaces!r} is not a current run of this chat")
        runs.filter(pk__gte=replaced.pk).update(superseded=True)


@cache
def _conversation_sql() -> str:
    """Every field of the owner's conversation, locked where rows lock (SQLite's
    immediate transaction already holds the database)."""
    fields = Conversation._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return (
        f"SELECT {columns} FROM {table(Conversation)} "
        f"WHERE {column(Conversation, 'owner')} = %s AND {column(Conversation, 'id')} = %s{lock}"
    )


@cache
def _running_sql() -> str:
    return (
        f"SELECT {column(Run, 'id')}, {column(Run, 'lease_until')} FROM {table(Run)} "
        f"WHERE {column(Run, 'conversation')} = %s AND {column(Run, 'status')} = %s"
    )


@cache
def _keys_sql() -> str:
    """PostgreSQL: the next run key and the next message key, from their sequences."""

    def next_key(model: type[Run] | type[Message]) -> str:
        return f"nextval(pg_get_serial_sequence('{table(model)}', '{model._meta.pk.column}'))"

    return f"SELECT {next_key(Run)}, {next_key(Message)}"
