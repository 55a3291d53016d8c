"""Reads for the chat: conversations, run history, what the composer offers.

Everything is scoped to ``owner``: another user's conversation or run is "not found"
(404), never "forbidden", so its existence does not leak.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Prefetch, QuerySet

from chat_app.explain import explain_expand
from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord
from core.api_errors import NotFoundError
from core.model_sql import column, db_value, table
from openprogram.agent.events import HistoryMessage
from openprogram.programs.explain_words import plain_reason
from openprogram.programs.results import results_dir_for_user
from openprogram.workspace import workspace_for_user, workspace_path_for_user

__all__ = [
    "ModelChoice",
    "conversation_by_public_id",
    "conversation_get",
    "conversation_history",
    "conversation_history_statement",
    "conversation_list",
    "conversation_transcript",
    "history_messages",
    "model_checks_pending_mark",
    "model_checks_run",
    "model_choices",
    "model_key_problem",
    "run_events",
    "run_explain_groups",
    "run_explain_rows",
    "run_get",
    "run_latest",
    "run_list",
    "tool_result_path",
    "workspace_for",
    "workspace_path_for",
]


@dataclass(frozen=True)
class ModelChoice:
    name: str
    problem: str | None
    """Why this model cannot run now (a missing API key), or None."""
    checked: bool = True
    """False while start-up still runs the key checks: ``problem`` is not known yet."""


def conversation_list(*, owner: AbstractBaseUser) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=owner).order_by("-updated", "-id")


def conversation_get(
    *, owner: AbstractBaseUser, conversation_id: int, lock: bool = False
) -> Conversation:
    """The owner's conversation; ``lock``: ``select_for_update`` (inside a transaction)."""
    rows = Conversation.objects.filter(owner=owner, pk=conversation_id)
    conversation = (rows.select_for_update() if lock else rows).first()
    if conversation is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    return conversation


def conversation_by_public_id(*, owner: AbstractBaseUser, public_id: str | UUID) -> Conversation:
    """The owner's conversation named by its public id (URLs, API, socket); else 404.

    A malformed id is "not found" too, so no id leaks anything about another user's.
    """
    try:
        key = public_id if isinstance(public_id, UUID) else UUID(str(public_id))
    except ValueError:
        raise NotFoundError(f"conversation {str(public_id)[:64]!r} not found") from None
    conversation = Conversation.objects.filter(owner=owner, public_id=key).first()
    if conversation is None:
        raise NotFoundError(f"conversation {str(key)!r} not found")
    return conversation


def conversation_history(*, conversation: Conversation, before: Message) -> list[HistoryMessage]:
    """Earlier user/assistant text for the next prompt; tool results never appear here.

    Runs replaced by an edit or a regeneration are left out: the prompt follows the
    conversation as it now stands.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            *conversation_history_statement(
                conversation_id=conversation.pk, before_id=before.pk, before_created=before.created
            )
        )
        return history_messages(cursor.fetchall())


def conversation_history_statement(
    *, conversation_id: int, before_id: int, before_created: datetime
) -> tuple[str, list[Any]]:
    """:func:`conversation_history`'s one statement and parameters: ``(role, text)`` rows of
    the messages up to the one with key ``before_id``, created at ``before_created`` (left
    out), oldest first. Every turn's start sends it (``chat_app.turn_store``): through the
    ORM it cost several times running it."""
    created = db_value(Message, "created", before_created)
    return _history_sql(), [conversation_id, created, before_id, True]


@functools.cache
def _history_sql() -> str:
    m, r = table(Message), table(Run)
    created, mid = column(Message, "created"), column(Message, "id")
    return (
        f"SELECT {m}.{column(Message, 'role')}, {m}.{column(Message, 'text')} FROM {m} "
        f"LEFT OUTER JOIN {r} ON {m}.{column(Message, 'run')} = {r}.{column(Run, 'id')} "
        f"WHERE {m}.{column(Message, 'conversation')} = %s "
        f"AND {m}.{created} <= %s "
        f"AND {m}.{mid} <> %s "
        f"AND NOT ({r}.{column(Run, 'superseded')} = %s "
        f"AND {r}.{column(Run, 'superseded')} IS NOT NULL) "
        f"ORDER BY {m}.{created} ASC, {m}.{mid} ASC"
    )


def history_messages(rows: Iterable[tuple[str, str]]) -> list[HistoryMessage]:
    """``conversation_history``'s messages from its ``(role, text)`` rows, empty ones left out."""
    return [HistoryMessage(role=role, content=text) for role, text in rows if text.strip()]


def conversation_transcript(*, conversation: Conversation) -> list[Run]:
    """The conversation's runs, oldest first, each with its messages and tool calls."""
    return list(
        conversation.runs.order_by("started", "id").prefetch_related(
            Prefetch("messages", queryset=Message.objects.order_by("created", "id")),
            Prefetch("tool_calls", queryset=ToolCallRecord.objects.order_by("created", "id")),
        )
    )


def run_list(*, owner: AbstractBaseUser, conversation_id: int) -> QuerySet[Run]:
    conversation = conversation_get(owner=owner, conversation_id=conversation_id)
    return conversation.runs.order_by("-started", "-id")


def run_get(*, owner: AbstractBaseUser, run_id: int) -> Run:
    run = Run.objects.filter(conversation__owner=owner, pk=run_id).first()
    if run is None:
        raise NotFoundError(f"run {run_id!r} not found")
    return run


def run_latest(*, conversation_id: int) -> Run | None:
    return Run.objects.filter(conversation_id=conversation_id).order_by("-started", "-id").first()


def run_explain_rows(*, run: Run) -> list[dict[str, Any]]:
    """The run's full explain trace: one row per registered tool, offered or not and why."""
    return explain_expand(run.explain, tools=run.tools, deferred=run.deferred)


def run_explain_groups(*, run: Run) -> list[dict[str, Any]]:
    """The tools not offered, grouped by the layer and reason that rejected them."""
    groups: dict[tuple[str | None, str], list[str]] = {}
    for row in run_explain_rows(run=run):
        if not row["offered"]:
            groups.setdefault((row["layer"], row["reason"]), []).append(row["name"])
    return [
        {"layer": layer, "reason": reason, "names": names, "words": plain_reason(layer, reason)}
        for (layer, reason), names in groups.items()
    ]


def run_events(*, run_id: int, after_seq: int = 0) -> list[dict[str, Any]]:
    """The run's events as they were relayed (tools_resolved gets its lists back from the Run)."""
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    events = [
        {**payload, "type": kind, "seq": seq, "run_id": run_id}
        for seq, kind, payload in rows.values_list("seq", "type", "payload")
    ]
    for event in events:
        if event["type"] == "tools_resolved" and "tools" not in event:
            lists = Run.objects.filter(pk=run_id).values("tools", "deferred", "explain").first()
            event.update(lists or {})
    return events


def tool_result_path(*, owner: AbstractBaseUser, run_id: int, call_id: str) -> Path:
    """The persisted full result of one call, for its owner only.

    1. The run must belong to ``owner`` (else 404, like any foreign object).
    2. The call must have recorded a full-result path.
    3. That path, resolved (symlinks followed), must lie inside the owner's own
       results directory and be a regular file; anything else is "not found".
    """
    run = run_get(owner=owner, run_id=run_id)
    record = run.tool_calls.filter(call_id=call_id).first()
    if record is None or not record.full_result_path:
        raise NotFoundError(f"no full result for call {call_id!r}")
    root = results_dir_for_user(owner.pk).resolve()
    path = Path(record.full_result_path).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise NotFoundError(f"no full result for call {call_id!r}")
    return path


def workspace_for(*, user: AbstractBaseUser) -> Path:
    """The user's working directory for file and shell tools (created on first use).

    The framework's rule, so the chat and the tools never disagree: the shared
    workspace when one is configured, else ``<workspaces dir>/<user id>``.
    """
    return workspace_for_user(user.pk)


def workspace_path_for(*, user: AbstractBaseUser) -> Path:
    """``workspace_for``'s directory, remembered per process once created: what a turn's
    start names for its tools (they make sure it still exists when they use it)."""
    return workspace_path_for_user(user.pk)


def model_key_problem(model: str) -> str | None:
    """A readable reason ``model`` cannot be called now (missing API key), or None."""
    if model == "offline":
        return None
    return _model_key_problem_cached(model, _provider_env_fingerprint())


def _provider_env_fingerprint() -> tuple[str, ...]:
    # Re-check when keys appear in the environment without restarting.
    return tuple(sorted(k for k in os.environ if k.endswith(("_API_KEY", "_API_BASE", "_TOKEN"))))


@functools.lru_cache(maxsize=64)
def _model_key_problem_cached(model: str, _fingerprint: tuple[str, ...]) -> str | None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # ~5 s to import: only when a real model is configured.
    import litellm

    try:
        check = litellm.validate_environment(model=model)
    except Exception as exc:  # an unknown provider prefix, for one
        return f"model {model!r} cannot be checked: {exc}"
    missing = check.get("missing_keys") or []
    if check.get("keys_in_environment") or not missing:
        return None
    return f"model {model!r} needs {', '.join(missing)} set in the server's environment"


_checks_pending = threading.Event()
"""Set from start-up until its thread has run the configured models' key checks."""


def model_checks_pending_mark() -> None:
    """Start-up is about to run the key checks on a thread (``model_checks_run``)."""
    _checks_pending.set()


def model_checks_run() -> None:
    """Run every configured model's key check now (the first imports litellm), then let
    pages show their answers."""
    try:
        for model in settings.OPENPROGRAM_MODELS:
            model_key_problem(model)
    finally:
        _checks_pending.clear()


def model_choices() -> list[ModelChoice]:
    """The configured models, each with why it cannot be called now (or None).

    While start-up's thread is still running the key checks (litellm's import takes ~5 s,
    far more on a busy machine), a real model is returned unchecked (``checked`` False,
    no problem) rather than waited for: no page waits on that import. A turn's start checks
    its model whatever the page showed."""
    pending = _checks_pending.is_set()
    return [
        ModelChoice(name=m, problem=None, checked=False)
        if pending and m != "offline"
        else ModelChoice(name=m, problem=model_key_problem(m))
        for m in settings.OPENPROGRAM_MODELS
    ]
