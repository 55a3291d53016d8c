"""Writes for the chat's conversations: create, rename, choose options, delete.

What a user may pick (a profile, a model, an agent profile) is validated once, in
``chat_app.composer_choices``, for the page, the API and the socket alike. Every write of
a turn (its run, its events, its end) is in ``chat_app.turn_store``.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from accounts.preferences import preferred_model
from chat_app.composer_choices import (
    NO_AGENT,
    check_agent_profile,
    check_model,
    check_profile,
    conversation_choose_options,
)
from chat_app.models import TITLE_MAX, Conversation
from chat_app.schemas import TurnOptions
from chat_app.turn_store import run_expire_orphans
from core.api_errors import ConflictError, UnprocessableError
from tools_app.selectors import active_profile_name

__all__ = [
    "NO_AGENT",
    "conversation_apply_options",
    "conversation_choose_options",
    "conversation_create",
    "conversation_delete",
    "conversation_rename",
]


def conversation_create(
    *,
    owner: AbstractBaseUser,
    title: str = "",
    profile: str | None = None,
    model: str | None = None,
    agent_profile: int | None = None,
) -> Conversation:
    profile_name = profile or active_profile_name(owner=owner)
    check_profile(owner, profile_name)
    chosen_model = model or preferred_model(user=owner)
    check_model(chosen_model)
    if agent_profile is not None:
        check_agent_profile(owner, agent_profile)
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


def conversation_delete(*, conversation: Conversation) -> None:
    run_expire_orphans(conversation_id=conversation.pk)
    if conversation.runs.filter(status="running").exists():
        raise ConflictError(f"conversation {conversation.pk!r} has a turn running; stop it first")
    conversation.delete()
