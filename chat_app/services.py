"""Writes for the chat: conversations, the start and end of a run, and its recorded events.

Validation of what a user may pick (a profile, a model, an agent profile) happens
here, once, for the page, the API and the socket alike.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.preferences import preferred_model
from chat_app.explain import explain_compact
from chat_app.history_sql import run_events_insert, tool_call_close, tool_call_open
from chat_app.models import (
    TITLE_MAX,
    Conversation,
    Message,
    Run,
    RunEvent,
    RunStatus,
    ToolCallRecord,
    lease_deadline,
)
from chat_app.schemas import TurnOptions
from chat_app.titles import title_from_message
from chat_app.turn_limits import turn_start_allow
from openprogram_site.api_errors import ConflictError, NotFoundError, UnprocessableError

__all__ = [
    "NO_AGENT",
    "ORPHANED_RUN_ERROR",
    "conversation_apply_options",
    "conversation_create",
    "conversation_delete",
    "conversation_rename",
    "run_abandon_orphans",
    "run_expire_orphans",
    "run_finish",
    "run_record_events",
    "run_renew_lease",
    "run_start",
    "runs_close_at_startup",
]

NO_AGENT = 0
ORPHANED_RUN_ERROR = "the server running this turn stopped"


def _check_profile(owner: AbstractBaseUser, name: str) -> None:
    from tools_app.selectors import profile_names

    if name not in profile_names(owner=owner):
        raise UnprocessableError(f"tool profile {name!r} does not exist")


def _check_model(model: str) -> None:
    if model not in settings.OPENPROGRAM_MODELS:
        offered = ", ".join(repr(m) for m in settings.OPENPROGRAM_MODELS)
        raise UnprocessableError(f"model {model!r} is not offered (offered: {offered})")


def _check_agent_profile(owner: AbstractBaseUser, agent_profile_id: int) -> None:
    from tools_app.models import AgentProfile

    if not AgentProfile.objects.filter(owner=owner, pk=agent_profile_id).exists():
        raise UnprocessableError(f"agent profile {agent_profile_id!r} does not exist")


def conversation_create(
    *,
    owner: AbstractBaseUser,
    title: str = "",
    profile: str | None = None,
    model: str | None = None,
    agent_profile: int | None = None,
) -> Conversation:
    from tools_app.selectors import active_profile_name

    profile_name = profile or active_profile_name(owner=owner)
    _check_profile(owner, profile_name)
    chosen_model = model or preferred_model(user=owner)
    _check_model(chosen_model)
    if agent_profile is not None:
        _check_agent_profile(owner, agent_profile)
    return Conversation.objects.create(
        owner=owner,
        title=title.strip()[:TITLE_MAX],
        profile_name=profile_name,
        model=chosen_model,
        agent_profile_id=agent_profile,
    )


def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    title = " ".join(title.split())
    if not title:
        raise UnprocessableError("a conversation title cannot be empty")
    conversation.title = title[:TITLE_MAX]
    conversation.save(update_fields=["title", "updated"])
    return conversation


def conversation_apply_options(
    *, conversation: Conversation, options: TurnOptions, clear_agent: bool = False
) -> Conversation:
    """Remember the composer's choices on the conversation (profile, model, toggles).

    ``clear_agent`` unsets the agent profile (the API's explicit null); so does the
    socket's ``agent_profile: 0`` (``NO_AGENT``), since there null means "keep".
    """
    changed: list[str] = []
    if options.profile is not None:
        # The owner is loaded only when a choice needs checking against it (one query).
        _check_profile(conversation.owner, options.profile)
        conversation.profile_name = options.profile
        changed.append("profile_name")
    if options.model is not None:
        _check_model(options.model)
        conversation.model = options.model
        changed.append("model")
    if options.agent_profile == NO_AGENT or (options.agent_profile is None and clear_agent):
        conversation.agent_profile_id = None
        changed.append("agent_profile")
    elif options.agent_profile is not None:
        _check_agent_profile(conversation.owner, options.agent_profile)
        conversation.agent_profile_id = options.agent_profile
        changed.append("agent_profile")
    for flag in ("tools_on", "web_search_on", "plan_mode", "attended"):
        value = getattr(options, flag)
        if value is not None:
            setattr(conversation, flag, value)
            changed.append(flag)
    if changed:
        conversation.save(update_fields=[*changed, "updated"])
    return conversation


def conversation_delete(*, conversation: Conversation) -> None:
    run_expire_orphans(conversation_id=conversation.pk)
    if conversation.runs.filter(status="running").exists():
        raise ConflictError(f"conversation {conversation.pk!r} has a turn running; stop it first")
    conversation.delete()


def run_start(
    *,
    conversation: Conversation,
    text: str,
    attended: bool,
    replaces: int | None = None,
    locked: bool = False,
) -> tuple[Run, Message]:
    """Open a run and store the user's message; one running turn per conversation.

    ``replaces`` (an edit or a regeneration): that run of this conversation and every
    later one are marked superseded: kept in history, left out of later prompts.
    ``locked``: the caller loaded ``conversation`` with ``select_for_update`` in the
    transaction this runs in (a turn's start), so it is not loaded and locked again.
    """
    with transaction.atomic():
        locked_row = conversation if locked else _conversation_lock(conversation.pk)
        # Under the conversation's lock, so two processes cannot both take over a dead turn.
        # One query for both: close the runs whose lease lapsed, refuse if one still holds.
        now = timezone.now()
        running = list(locked_row.runs.filter(status="running").values_list("pk", "lease_until"))
        lapsed = [pk for pk, until in running if until is None or until < now]
        _close_run_ids(lapsed, reason=ORPHANED_RUN_ERROR)
        if len(lapsed) < len(running):
            raise ConflictError("a turn is already running in this conversation; stop it first")
        turn_start_allow(owner_id=locked_row.owner_id)
        if replaces is not None:
            replaced = locked_row.runs.filter(pk=replaces, superseded=False).first()
            if replaced is None:
                raise UnprocessableError(f"run {replaces!r} is not a current run of this chat")
            locked_row.runs.filter(pk__gte=replaced.pk).update(superseded=True)
        run = Run.objects.create(
            conversation=locked_row,
            model=conversation.model,
            profile_name=conversation.profile_name,
            attended=attended,
            options={
                "tools_on": conversation.tools_on,
                "web_search_on": conversation.web_search_on,
                "plan_mode": conversation.plan_mode,
                "agent_profile": conversation.agent_profile_id,
            },
        )
        message = Message.objects.create(conversation=locked_row, role="user", text=text, run=run)
        if not locked_row.title:
            locked_row.title = title_from_message(text)
        Conversation.objects.filter(pk=locked_row.pk).update(
            title=locked_row.title, updated=timezone.now()
        )
        conversation.title = locked_row.title
    return run, message


def _conversation_lock(conversation_id: int) -> Conversation:
    locked = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
    if locked is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    return locked


def _apply_event(run_id: int, event: dict[str, Any]) -> None:
    """Keep the run's summary and tool-call rows in step with one event.

    Written by run id, without loading the run: most events touch only their own rows.
    """
    kind = event["type"]
    if kind == "tools_resolved":
        tools, deferred = event.get("tools", []), event.get("deferred", [])
        summary: dict[str, Any] = {
            "tools": tools,
            "deferred": deferred,
            "explain": explain_compact(event.get("explain", []), tools=tools, deferred=deferred),
            "warnings": event.get("warnings", []),
        }
        if event.get("model"):
            summary["model"] = event["model"]
        Run.objects.filter(pk=run_id).update(**summary)
    elif kind == "tool_call_started":
        arguments = event.get("arguments")
        # One upsert (the same call may be announced again, e.g. by a nested run).
        tool_call_open(
            run_id=run_id,
            call_id=event["call_id"],
            name=event["name"],
            arguments=arguments if arguments is not None else {},
            parent_call_id=event.get("parent_call_id") or "",
        )
    elif kind == "approval_requested":
        ToolCallRecord.objects.filter(run_id=run_id, call_id=event["call_id"]).update(
            status="awaiting_approval"
        )
    elif kind == "approval_resolved":
        ToolCallRecord.objects.filter(run_id=run_id, call_id=event["call_id"]).update(
            status="running" if event.get("approved") else "denied"
        )
    elif kind == "tool_finished":
        _tool_call_finish(run_id, event)
    elif kind == "todo_updated":
        conversation_id = Run.objects.filter(pk=run_id).values("conversation_id")
        Conversation.objects.filter(pk__in=conversation_id).update(todos=event.get("todos", []))
    elif kind == "error":
        Run.objects.filter(pk=run_id).update(error=event.get("message", ""))


def _tool_call_finish(run_id: int, event: dict[str, Any]) -> None:
    """Close a call's row with its result in one UPDATE; a denied call stays denied."""
    is_error = bool(event.get("is_error"))
    result = {
        "result_preview": event.get("preview", ""),
        "is_error": is_error,
        "truncated": bool(event.get("truncated")),
        "full_result_path": event.get("full_result_path") or "",
        "duration_ms": float(event.get("duration_ms") or 0.0),
    }
    # Cut off by Stop: shown as stopped, not as a failure of the tool.
    status = "stopped" if event.get("stopped") else "error" if is_error else "done"
    if not tool_call_close(run_id=run_id, call_id=event["call_id"], status=status, result=result):
        # Never announced (a call the framework refused before starting it).
        ToolCallRecord.objects.create(
            run_id=run_id,
            call_id=event["call_id"],
            name=event.get("name", ""),
            status=status,
            **result,
        )


_ON_THE_RUN = ("tools", "deferred", "explain")
"""tools_resolved fields the Run itself stores; the event row would only repeat them."""


def _event_payload(event: dict[str, Any]) -> dict[str, Any]:
    dropped = {"seq", "type", "run_id"}
    if event["type"] == "tools_resolved":
        dropped.update(_ON_THE_RUN)
    return {k: v for k, v in event.items() if k not in dropped}


def run_record_events(*, run_id: int, events: list[dict[str, Any]]) -> None:
    """Append events (each carrying its ``seq``) to run history, in one transaction."""
    if not events:
        return
    # Inside a batch (chat_app.db_batch) the batch's transaction covers it: no savepoint.
    with transaction.atomic(savepoint=False):
        run_events_insert(
            run_id=run_id,
            events=[(event["seq"], event["type"], _event_payload(event)) for event in events],
        )
        for event in events:
            _apply_event(run_id, event)


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
        # Only what is read here: the run's JSON fields (tools, explain) cost to decode.
        run = (
            Run.objects.select_for_update()
            .only("id", "conversation_id", "status", "text", "error")
            .get(pk=run_id)
        )
        if run.status != "running":
            closed = run.messages.filter(role="assistant").order_by("-id").first()
            if closed is not None:
                closed.run = run  # callers read the verdict that stands from message.run
                return closed
            return Message.objects.create(
                conversation_id=run.conversation_id, role="assistant", text=run.text, run=run
            )
        run.status = status
        run.text = text
        run.usage = usage or {}
        if error:
            run.error = error
        run.finished = timezone.now()
        run.lease_until = None
        run.save(update_fields=["status", "text", "usage", "error", "finished", "lease_until"])
        # Calls still open when the turn ended (stopped, errored) are closed with it.
        run.tool_calls.filter(status__in=["running", "awaiting_approval"]).update(
            status="stopped" if status == "stopped" else "error",
            is_error=True,
            result_preview=f"turn {status}",
        )
        message = Message.objects.create(
            conversation_id=run.conversation_id, role="assistant", text=text, run=run
        )
        # By id: loading the conversation to save one field cost a query and a model.
        Conversation.objects.filter(pk=run.conversation_id).update(updated=timezone.now())
    return message


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
