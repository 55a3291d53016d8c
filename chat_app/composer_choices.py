"""The composer's choices for a conversation (profile, model, agent profile, toggles):
validated once, for the page, the API and the socket alike, and set on the conversation
for the caller's one UPDATE (``chat_app.services`` saves them; a turn's start in
``chat_app.turn_store`` writes them with its run)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from chat_app.models import Conversation
from chat_app.schemas import TurnOptions
from core.api_errors import UnprocessableError
from tools_app.models import AgentProfile
from tools_app.selectors import profile_names

__all__ = [
    "NO_AGENT",
    "check_agent_profile",
    "check_model",
    "check_profile",
    "conversation_choose_options",
]

NO_AGENT = 0


def check_profile(owner: AbstractBaseUser, name: str) -> None:
    if name not in profile_names(owner=owner):
        raise UnprocessableError(f"tool profile {name!r} does not exist")


def check_model(model: str) -> None:
    if model not in settings.OPENPROGRAM_MODELS:
        offered = ", ".join(repr(m) for m in settings.OPENPROGRAM_MODELS)
        raise UnprocessableError(f"model {model!r} is not offered (offered: {offered})")


def check_agent_profile(owner: AbstractBaseUser, agent_profile_id: int) -> None:
    if not AgentProfile.objects.filter(owner=owner, pk=agent_profile_id).exists():
        raise UnprocessableError(f"agent profile {agent_profile_id!r} does not exist")


def conversation_choose_options(
    *, conversation: Conversation, options: TurnOptions, clear_agent: bool = False
) -> list[str]:
    """Validate and set the composer's choices on ``conversation``, unsaved.

    Returns the fields whose value changed, for the caller's one UPDATE (a turn's start
    writes them in its one conversation UPDATE, ``chat_app.turn_store``).
    """
    changed: list[str] = []

    def choose(field: str, value: Any) -> None:
        if getattr(conversation, field) != value:
            setattr(conversation, field, value)
            changed.append(field)

    if options.profile is not None:
        # The owner is loaded only when a choice needs checking against it (one query).
        check_profile(conversation.owner, options.profile)
        choose("profile_name", options.profile)
    if options.model is not None:
        check_model(options.model)
        choose("model", options.model)
    if options.agent_profile == NO_AGENT or (options.agent_profile is None and clear_agent):
        choose("agent_profile_id", None)
    elif options.agent_profile is not None:
        check_agent_profile(conversation.owner, options.agent_profile)
        choose("agent_profile_id", options.agent_profile)
    for flag in ("tools_on", "web_search_on", "plan_mode", "attended"):
        value = getattr(options, flag)
        if value is not None:
            choose(flag, value)
    return changed
