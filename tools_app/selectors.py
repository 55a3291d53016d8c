"""Reads: the catalog, a user's tool profiles and agent profiles, what a turn resolves with.

Everything here is scoped to ``owner``: another user's profile is "not found" (404),
never "forbidden", so its existence does not leak. Resolution itself is the
framework's (``tools_app.resolution``); these selectors only gather its inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Q, QuerySet

from accounts.models import ApiToken
from core.api_errors import NotFoundError
from core.model_sql import column, table
from openprogram.programs import DEFAULT_TOOLS, UnknownToolsetError, registry
from openprogram.programs.rules import PolicySet
from tools_app.catalog_sync import tool_catalog_sync_if_changed
from tools_app.models import DEFAULT_PROFILE, AgentProfile, Tool, ToolProfile, UserToolSettings
from tools_app.policy.selectors import policy_for_user
from tools_app.resolution import resolve_inputs, toolset_members

if TYPE_CHECKING:
    from openprogram.programs import Resolution

__all__ = [
    "ProfileView",
    "ToolState",
    "active_profile_name",
    "agent_profile_get",
    "agent_profile_list",
    "api_token_list",
    "can_use_context_for",
    "exposed_tool_names",
    "globally_disabled_names",
    "globally_disabled_reasons",
    "profile_get",
    "profile_list",
    "profile_names",
    "profile_tool_names",
    "profiles_and_disabled",
    "profiles_and_disabled_rows",
    "profiles_and_disabled_statement",
    "profiles_export",
    "resolution_for",
    "tool_get",
    "tool_list",
    "turn_resolution_inputs",
]

ToolState = Literal["enabled", "disabled", "missing"]


@dataclass(frozen=True)
class ProfileView:
    """A tool profile as pages and the API show it; ``default`` is virtual."""

    name: str
    tools: list[str]
    is_default: bool
    is_active: bool = False
    updated_at: datetime | None = None
    missing: list[str] = field(default_factory=list)
    """Names the profile keeps but no registered, exposed tool answers to now."""
    disabled: list[str] = field(default_factory=list)
    """Names in the profile that are globally disabled (dropped at resolution)."""


def exposed_tool_names() -> list[str]:
    """The default profile: the framework's ``DEFAULT_TOOLS``, in registry order.

    Every registered tool that is not ``expose=False`` (layer 2) except ``tool_search``,
    which is not a tool to pick: resolution adds it whenever something deferred is
    offered (layer 6). One list for the Programs page, the API and the framework.
    """
    tool_catalog_sync_if_changed()
    return [t.name for t in registry.filter_for(exposed_only=True) if t.name in DEFAULT_TOOLS]


def globally_disabled_names() -> set[str]:
    return set(Tool.objects.filter(disabled=True).values_list("name", flat=True))


def globally_disabled_reasons() -> dict[str, str]:
    """Globally disabled names → the admin's reason, which the explain trace carries."""
    return dict(Tool.objects.filter(disabled=True).values_list("name", "disabled_reason"))


def active_profile_name(*, owner: AbstractBaseUser) -> str:
    """The user's composer default; falls back to ``default`` if that profile is gone."""
    settings_row = UserToolSettings.objects.filter(user=owner).first()
    name = settings_row.active_profile if settings_row else DEFAULT_PROFILE
    if name != DEFAULT_PROFILE and not _owned(owner).filter(name=name).exists():
        return DEFAULT_PROFILE
    return name


def _owned(owner: AbstractBaseUser) -> QuerySet[ToolProfile]:
    return ToolProfile.objects.filter(owner=owner)


def _view(
    *,
    name: str,
    tools: list[str],
    is_default: bool,
    active: str,
    exposed: set[str],
    disabled: set[str],
    updated_at: datetime | None = None,
) -> ProfileView:
    return ProfileView(
        name=name,
        tools=list(tools),
        is_default=is_default,
        is_active=name == active,
        updated_at=updated_at,
        missing=[t for t in tools if t not in exposed],
        disabled=[t for t in tools if t in disabled],
    )


def profile_list(*, owner: AbstractBaseUser) -> list[ProfileView]:
    """The virtual ``default`` profile first, then the user's profiles by name."""
    exposed_list = exposed_tool_names()
    exposed, disabled = set(exposed_list), globally_disabled_names()
    active = active_profile_name(owner=owner)
    views = [
        _view(
            name=DEFAULT_PROFILE,
            tools=exposed_list,
            is_default=True,
            active=active,
            exposed=exposed,
            disabled=disabled,
        )
    ]
    views.extend(
        _view(
            name=row.name,
            tools=row.tools,
            is_default=False,
            active=active,
            exposed=exposed,
            disabled=disabled,
            updated_at=row.updated_at,
        )
        for row in _owned(owner).order_by("name")
    )
    return views


def profile_names(*, owner: AbstractBaseUser) -> list[str]:
    return [DEFAULT_PROFILE, *_owned(owner).order_by("name").values_list("name", flat=True)]


def profile_get(*, owner: AbstractBaseUser, name: str) -> ProfileView:
    """One profile of ``owner``; NotFoundError for an unknown or another user's name."""
    for view in profile_list(owner=owner):
        if view.name == name:
            return view
    raise NotFoundError(f"No tool profile named {name!r}.")


def profile_tool_names(*, owner: AbstractBaseUser, name: str) -> list[str] | None:
    """The tool names a profile selects; None for ``default`` (= every exposed tool)."""
    if name == DEFAULT_PROFILE:
        return None
    row = _owned(owner).filter(name=name).first()
    if row is None:
        raise NotFoundError(f"No tool profile named {name!r}.")
    return list(row.tools)


def profiles_export(*, owner: AbstractBaseUser) -> dict[str, Any]:
    """The spec's ``functions_meta.json`` shape: ``{"profiles": {...}, "active": name}``."""
    return {
        "profiles": {view.name: view.tools for view in profile_list(owner=owner)},
        "active": active_profile_name(owner=owner),
    }


def tool_list(
    *,
    search: str = "",
    source: str | None = None,
    toolset: str | None = None,
    state: ToolState | None = None,
    include_hidden: bool = False,
) -> list[Tool]:
    """Catalog rows for registered, exposed tools (plus missing ones for ``state="missing"``)."""
    tool_catalog_sync_if_changed()
    rows = Tool.objects.select_related("disabled_by").order_by("name")
    if not include_hidden:
        rows = rows.filter(exposed=True)
    rows = rows.filter(present=state != "missing")
    if state == "disabled":
        rows = rows.filter(disabled=True)
    elif state == "enabled":
        rows = rows.filter(disabled=False)
    if source:
        rows = rows.filter(source=source)
    if search.strip():
        term = search.strip()
        rows = rows.filter(
            Q(name__icontains=term) | Q(description__icontains=term) | Q(label__icontains=term)
        )
    result = list(rows)
    if toolset:
        # JSON containment lookups differ across SQLite/PostgreSQL; the list is small.
        result = [row for row in result if toolset in row.toolsets]
    return result


def tool_get(*, name: str) -> Tool:
    tool_catalog_sync_if_changed()
    row = Tool.objects.select_related("disabled_by").filter(name=name).first()
    if row is None:
        raise NotFoundError(f"No tool named {name!r}.")
    return row


def agent_profile_list(*, owner: AbstractBaseUser) -> list[AgentProfile]:
    return list(AgentProfile.objects.filter(owner=owner).order_by("name"))


def agent_profile_get(*, owner: AbstractBaseUser, pk: int) -> AgentProfile:
    row = AgentProfile.objects.filter(owner=owner, pk=pk).first()
    if row is None:
        raise NotFoundError(f"No agent profile with id {pk!r}.")
    return row


def _names_or_none(names: Iterable[str] | None) -> list[str] | None:
    names = list(names or [])
    return names or None


def turn_resolution_inputs(
    *,
    owner: AbstractBaseUser,
    profile_name: str | None,
    agent_profile_id: int | None = None,
    profiles_read: tuple[dict[str, list[str]], dict[str, str]] | None = None,
    policy: PolicySet | None = None,
) -> dict[str, Any]:
    """TurnRequest keyword arguments for ``owner``'s turn.

    ``profile_name`` None means the user's active profile. An agent profile adds its
    toolset (a tool profile or preset name), its allowed list (layer-5 allow), its
    disabled list (layer-5 deny), its model and its system prompt. Its ``enabled``
    list adds tools back to whatever its toolset selects. ``policy`` is the team policy
    that reaches the owner (``tools_app.policy``). ``profiles_read`` and ``policy``: what
    :func:`profiles_and_disabled` and ``policy_for_user`` give, already read for this turn
    (read here otherwise).
    """
    name = profile_name if profile_name is not None else active_profile_name(owner=owner)
    if profiles_read is None:
        profiles_read = profiles_and_disabled(owner_id=owner.pk)
    named_profiles, disabled = profiles_read
    if name != DEFAULT_PROFILE and name not in named_profiles:
        raise NotFoundError(f"No tool profile named {name!r}.")
    inputs: dict[str, Any] = {
        "profile_tools": None if name == DEFAULT_PROFILE else list(named_profiles[name]),
        "toolset": None,
        "allow": None,
        "deny": None,
        "disabled": disabled,
        "system_prompt": None,
        "model": None,
        "named_profiles": named_profiles,
        # The team policy reaching the owner (docs/policy.md): layer 5 and every call.
        "policy": policy if policy is not None else policy_for_user(user=owner),
    }
    if agent_profile_id is None:
        return inputs
    agent = agent_profile_get(owner=owner, pk=agent_profile_id)
    tools = {**{"toolset": None, "enabled": [], "disabled": [], "allowed": []}, **agent.tools}
    inputs["toolset"] = _agent_toolset(tools, named_profiles)
    inputs["allow"] = _names_or_none(tools["allowed"])
    inputs["deny"] = _names_or_none(tools["disabled"])
    inputs["system_prompt"] = agent.system_prompt or None
    inputs["model"] = agent.model or None
    return inputs


def profiles_and_disabled(*, owner_id: int) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The owner's profiles (name → tools) and the global disables (name → reason), read
    fresh (so an edit in the admin or the Programs page applies to the next turn in
    every process)."""
    with connection.cursor() as cursor:
        cursor.execute(*profiles_and_disabled_statement(owner_id=owner_id))
        return profiles_and_disabled_rows(cursor.fetchall())


def profiles_and_disabled_statement(*, owner_id: int) -> tuple[str, list[object]]:
    """:func:`profiles_and_disabled`'s one statement and parameters (its rows: for
    :func:`profiles_and_disabled_rows`). Every turn starts with it
    (``chat_app.turn_store``), and two ORM queries cost several times its CPU."""
    return _profiles_and_disabled_sql(), [owner_id, True]


@cache
def _profiles_and_disabled_sql() -> str:
    return (
        f"SELECT 0, {column(ToolProfile, 'name')}, CAST({column(ToolProfile, 'tools')} AS TEXT) "
        f"FROM {table(ToolProfile)} WHERE {column(ToolProfile, 'owner')} = %s "
        f"UNION ALL SELECT 1, {column(Tool, 'name')}, {column(Tool, 'disabled_reason')} "
        f"FROM {table(Tool)} WHERE {column(Tool, 'disabled')} = %s"
    )


def profiles_and_disabled_rows(
    rows: Iterable[tuple[int, str, Any]],
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """What :func:`profiles_and_disabled_statement`'s rows say."""
    profiles: dict[str, list[str]] = {}
    disabled: dict[str, str] = {}
    for kind, name, value in rows:
        if kind == 0:
            profiles[name] = list(json.loads(value) or [])
        else:
            disabled[name] = value
    return profiles, disabled


def _agent_toolset(tools: dict[str, Any], named_profiles: dict[str, list[str]]) -> str | None:
    """The agent's toolset name; with ``enabled`` names it becomes a synthetic profile.

    "enabled adds back" is expressed as a named profile the framework resolves like any
    other, so no selection logic is written here: the toolset's members plus enabled.
    """
    toolset, enabled = tools.get("toolset"), list(tools.get("enabled") or [])
    if not enabled:
        return toolset
    if toolset in (None, DEFAULT_PROFILE):
        return toolset  # already everything exposed; nothing to add back
    try:
        members = toolset_members(toolset, named_profiles)
    except UnknownToolsetError:
        return toolset  # resolution reports the unknown name; no guessing here
    synthetic = f"{toolset}+enabled"  # '+' never appears in a user's profile name
    named_profiles[synthetic] = [*members, *enabled]
    return synthetic


def api_token_list(*, owner: AbstractBaseUser) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=owner).order_by("-created_at"))


def can_use_context_for(owner: AbstractBaseUser) -> dict[str, Any]:
    """What a tool's layer-4 ``can_use(**context)`` gate learns about the user."""
    return {"user_id": owner.pk, "username": owner.get_username(), "is_staff": owner.is_staff}


def resolution_for(
    *,
    owner: AbstractBaseUser,
    profile_name: str | None,
    source: str | None = None,
    attended: bool = True,
    tools_on: bool = True,
    web_search_on: bool = True,
    agent_profile_id: int | None = None,
    plan_mode: bool = False,
) -> Resolution:
    """The framework's Resolution for a turn of ``owner`` with these settings."""
    inputs = turn_resolution_inputs(
        owner=owner, profile_name=profile_name, agent_profile_id=agent_profile_id
    )
    return resolve_inputs(
        inputs,
        source=source,
        attended=attended,
        tools_on=tools_on,
        web_search_on=web_search_on,
        plan_mode=plan_mode,
        can_use_context=can_use_context_for(owner),
    )
