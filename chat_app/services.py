"""Writes for the chat: conversations; the one import for every chat write.

Validation of what a user may pick (a profile, a model, an agent profile) happens
here, once, for the page, the API and the socket alike. A run's start and end live in
``chat_app.run_lifecycle``, its recorded events in ``chat_app.run_recording``; their
functions are named here too, so callers import every chat write from one place.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from accounts.preferences import preferred_model
from chat_app.models import TITLE_MAX, Conversation
from chat_app.run_lifecycle import (
    ORPHANED_RUN_ERROR,
    run_abandon_orphans,
    run_expire_orphans,
    run_finish,
    run_renew_lease,
    run_start,
    runs_close_at_startup,
)
from chat_app.run_recording import run_record_events
from chat_app.schemas import TurnOptions
from core.api_errors import ConflictError, UnprocessableError

__all__ = [
    "NO_AGENT",
    "ORPHANED_RUN_ERROR",
    "conversation_apply_options",
    "conversation_choose_options",
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
    changed = conversation_choose_options(
        conversation=conversation, options=options, clear_agent=clear_agent
    )
    if changed:
        conversation.save(update_fields=[*changed, "updated"])
    return conversation


def conversation_choose_options(
    *, conversation: Conversation, options: TurnOptions, clear_agent: bool = False
) -> list[str]:
    """Validate and set the composer's choices on ``conversation``, unsaved.

    Returns the fields whose value changed, for the caller's one UPDATE (a turn's start
    writes them with the run's, see ``run_start``'s ``conversation_fields``).
    """
    changed: list[str] = []

    def choose(field: str, value: Any) -> None:
        if getattr(conversation, field) != value:
            setattr(conversation, field, value)
            changed.append(field)

    if options.profile is not None:
        # The owner is loaded only when a choice needs checking against it (one query).
        _check_profile(conversation.owner, options.profile)
        choose("profile_name", options.profile)
    if options.model is not None:
        _check_model(options.model)
        choose("model", options.model)
    if options.agent_profile == NO_AGENT or (options.agent_profile is None and clear_agent):
        choose("agent_profile_id", None)
    elif options.agent_profile is not None:
        _check_agent_profile(conversation.owner, options.agent_profile)
        choose("agent_profile_id", options.agent_profile)
    for flag in ("tools_on", "web_search_on", "plan_mode", "attended"):
        value = getattr(options, flag)
        if value is not None:
            choose(flag, value)
    return changed


def conversation_delete(*, conversation: Conversation) -> None:
    run_expire_orphans(conversation_id=conversation.pk)
    if conversation.runs.filter(status="running").exists():
        raise ConflictError(f"conversation {conversation.pk!r} has a turn running; stop it first")
    conversation.delete()
