"""Writes for agent profiles: model, system prompt and the spec's ``tools`` field.

``tools`` is ``{"toolset": name|None, "enabled": [...], "disabled": [...],
"allowed": [...]}``; its toolset must be one of the owner's tool profiles or a
framework preset, checked here so a typo fails when saved, not on the next turn.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from core.api_errors import ConflictError, NotFoundError, UnprocessableError
from openprogram.programs.toolsets import known_toolset_names
from tools_app.models import PROFILE_NAME_MAX, AgentProfile, ToolProfile
from tools_app.services import tool_names_validate

__all__ = [
    "agent_profile_create",
    "agent_profile_delete",
    "agent_profile_update",
    "agent_tools_validate",
]


def agent_tools_validate(owner: AbstractBaseUser, tools: Any) -> dict[str, Any]:
    """The spec's agent ``tools`` field, checked: a known toolset and lists of names."""
    if tools is None:
        tools = {}
    if not isinstance(tools, dict):
        raise UnprocessableError('"tools" must be an object with toolset/enabled/disabled/allowed.')
    unknown_keys = set(tools) - {"toolset", "enabled", "disabled", "allowed"}
    if unknown_keys:
        raise UnprocessableError(
            f"Unknown keys in tools: {', '.join(map(repr, sorted(unknown_keys)))}."
        )
    toolset = tools.get("toolset")
    if toolset is not None:
        own = ToolProfile.objects.filter(owner=owner).values_list("name", flat=True)
        known = known_toolset_names({name: () for name in own})
        if toolset not in known:
            raise UnprocessableError(
                f"Toolset {toolset!r} is neither one of your tool profiles nor a preset "
                f"(known: {', '.join(known)})."
            )
    return {
        "toolset": toolset,
        **{
            key: tool_names_validate(tools.get(key) or [])
            for key in ("enabled", "disabled", "allowed")
        },
    }


def _clean_agent_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UnprocessableError("An agent profile name is required.")
    cleaned = name.strip()
    if len(cleaned) > PROFILE_NAME_MAX:
        raise UnprocessableError(f"Agent profile names are at most {PROFILE_NAME_MAX} characters.")
    return cleaned


def _save_agent(row: AgentProfile) -> AgentProfile:
    clash = AgentProfile.objects.filter(owner=row.owner, name__iexact=row.name).exclude(pk=row.pk)
    if clash.exists():
        raise ConflictError(f"You already have an agent profile named {row.name!r}.")
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError as exc:
        raise ConflictError(f"You already have an agent profile named {row.name!r}.") from exc
    return row


def agent_profile_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    model: str = "",
    system_prompt: str = "",
    tools: dict[str, Any] | None = None,
) -> AgentProfile:
    return _save_agent(
        AgentProfile(
            owner=owner,
            name=_clean_agent_name(name),
            model=(model or "").strip()[:200],
            system_prompt=system_prompt or "",
            tools=agent_tools_validate(owner, tools),
        )
    )


def agent_profile_update(*, owner: AbstractBaseUser, pk: int, **changes: Any) -> AgentProfile:
    """Change any of ``name``, ``model``, ``system_prompt``, ``tools``; others are refused."""
    unknown = set(changes) - {"name", "model", "system_prompt", "tools"}
    if unknown:
        raise UnprocessableError(f"Cannot change {', '.join(map(repr, sorted(unknown)))}.")
    row = AgentProfile.objects.filter(owner=owner, pk=pk).first()
    if row is None:
        raise NotFoundError(f"No agent profile with id {pk!r}.")
    if "name" in changes:
        row.name = _clean_agent_name(changes["name"])
    if "model" in changes:
        row.model = (changes["model"] or "").strip()[:200]
    if "system_prompt" in changes:
        row.system_prompt = changes["system_prompt"] or ""
    if "tools" in changes:
        row.tools = agent_tools_validate(owner, changes["tools"])
    return _save_agent(row)


def agent_profile_delete(*, owner: AbstractBaseUser, pk: int) -> None:
    deleted, _ = AgentProfile.objects.filter(owner=owner, pk=pk).delete()
    if not deleted:
        raise NotFoundError(f"No agent profile with id {pk!r}.")
