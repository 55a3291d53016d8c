"""Writes: tool profiles, the active profile, global disables, import, API tokens.

Every function is keyword-only and scoped to ``owner``. Failures raise the domain
errors of ``core.api_errors`` (404 unknown or another user's, 409
duplicate or in use, 422 invalid), which the API maps to JSON and the Programs
page shows inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import api_token_create
from core.api_errors import ConflictError, NotFoundError, UnprocessableError
from tools_app.models import (
    DEFAULT_PROFILE,
    PROFILE_NAME_MAX,
    RESERVED_PROFILE_NAMES,
    AgentProfile,
    Tool,
    ToolProfile,
    UserToolSettings,
)
from tools_app.selectors import exposed_tool_names, tool_get
from tools_app.signals import tool_profile_deleted, tool_profile_renamed

__all__ = [
    "api_token_issue",
    "api_token_revoke",
    "profile_activate",
    "profile_add_tool",
    "profile_add_tools",
    "profile_create",
    "profile_delete",
    "profile_duplicate",
    "profile_remove_tool",
    "profile_rename",
    "profile_set_tools",
    "profile_validate_name",
    "profiles_import",
    "tool_disable",
    "tool_enable",
    "tool_names_validate",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.\-]*$")
_TOOL_NAME_MAX = 255
# Tool names travel in URLs (/api/profiles/<p>/tools/<tool>); registries never use these.
_TOOL_NAME_RE = re.compile(r"^[^\s/]+$")
_IMPORT_MAX_PROFILES = 200
_IMPORT_MAX_TOOLS = 5000


def profile_validate_name(name: Any) -> str:
    """The cleaned profile name, or UnprocessableError saying what is wrong with it."""
    if not isinstance(name, str) or not name.strip():
        raise UnprocessableError("A profile name is required.")
    cleaned = name.strip()
    if len(cleaned) > PROFILE_NAME_MAX:
        raise UnprocessableError(
            f"Profile name {cleaned[:20]!r}… is too long (at most {PROFILE_NAME_MAX} characters)."
        )
    if not _NAME_RE.match(cleaned):
        raise UnprocessableError(
            f"Profile name {cleaned!r} may use letters, digits, spaces, '_', '-' and '.', "
            "and must start with a letter or digit."
        )
    if cleaned.lower() in RESERVED_PROFILE_NAMES:
        raise UnprocessableError(f"Profile name {cleaned!r} is reserved.")
    return cleaned


def tool_names_validate(tools: Any) -> list[str]:
    """A de-duplicated list of tool names in the given order; unknown names are kept."""
    if not isinstance(tools, list | tuple) or not all(isinstance(t, str) for t in tools):
        raise UnprocessableError("Tools must be a list of tool names.")
    if len(tools) > _IMPORT_MAX_TOOLS:
        raise UnprocessableError(f"A profile may list at most {_IMPORT_MAX_TOOLS} tools.")
    cleaned: list[str] = []
    for raw in tools:
        name = raw.strip()
        if not name or len(name) > _TOOL_NAME_MAX:
            raise UnprocessableError(f"Tool name {raw[:40]!r} is empty or too long.")
        if not _TOOL_NAME_RE.match(name):
            raise UnprocessableError(f"Tool name {name[:40]!r} may not contain spaces or '/'.")
        if name not in cleaned:
            cleaned.append(name)
    return cleaned


def _editable(owner: AbstractBaseUser, name: str, *, lock: bool = True) -> ToolProfile:
    if name == DEFAULT_PROFILE:
        raise UnprocessableError(
            "The 'default' profile is built in (every exposed tool) and cannot be changed; "
            "duplicate it to make an editable copy."
        )
    rows = ToolProfile.objects.filter(owner=owner, name=name)
    row = (rows.select_for_update() if lock else rows).first()
    if row is None:
        raise NotFoundError(f"No tool profile named {name!r}.")
    return row


def _ensure_free(owner: AbstractBaseUser, name: str, *, except_pk: int | None = None) -> None:
    clash = ToolProfile.objects.filter(owner=owner, name__iexact=name)
    if except_pk is not None:
        clash = clash.exclude(pk=except_pk)
    if clash.exists():
        raise ConflictError(f"You already have a tool profile named {name!r}.")


def _save(row: ToolProfile) -> ToolProfile:
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError as exc:  # a concurrent create took the name first
        raise ConflictError(f"You already have a tool profile named {row.name!r}.") from exc
    return row


def profile_create(
    *, owner: AbstractBaseUser, name: str, tools: Iterable[str] | None = None
) -> ToolProfile:
    """A new profile; without ``tools`` it is a copy of ``default`` (every exposed tool)."""
    cleaned = profile_validate_name(name)
    chosen = tool_names_validate(list(tools)) if tools is not None else exposed_tool_names()
    _ensure_free(owner, cleaned)
    return _save(ToolProfile(owner=owner, name=cleaned, tools=chosen))


def profile_duplicate(*, owner: AbstractBaseUser, name: str, new_name: str) -> ToolProfile:
    """A copy of ``name`` (``default`` included) under ``new_name``."""
    if name == DEFAULT_PROFILE:
        return profile_create(owner=owner, name=new_name)
    source = ToolProfile.objects.filter(owner=owner, name=name).first()
    if source is None:
        raise NotFoundError(f"No tool profile named {name!r}.")
    return profile_create(owner=owner, name=new_name, tools=source.tools)


@transaction.atomic
def profile_rename(*, owner: AbstractBaseUser, name: str, new_name: str) -> ToolProfile:
    """Rename, carrying the active choice and agent profiles that refer to it along."""
    row = _editable(owner, name)
    cleaned = profile_validate_name(new_name)
    if cleaned == row.name:
        return row
    _ensure_free(owner, cleaned, except_pk=row.pk)
    old = row.name
    row.name = cleaned
    _save(row)
    UserToolSettings.objects.filter(user=owner, active_profile=old).update(active_profile=cleaned)
    tool_profile_renamed.send(sender=ToolProfile, owner=owner, old_name=old, new_name=cleaned)
    for agent in AgentProfile.objects.filter(owner=owner):
        if agent.tools.get("toolset") == old:
            agent.tools = {**agent.tools, "toolset": cleaned}
            agent.save(update_fields=["tools", "updated_at"])
    return row


@transaction.atomic
def profile_set_tools(*, owner: AbstractBaseUser, name: str, tools: Iterable[str]) -> ToolProfile:
    row = _editable(owner, name)
    row.tools = tool_names_validate(list(tools))
    row.save(update_fields=["tools", "updated_at"])
    return row


@transaction.atomic
def profile_add_tool(*, owner: AbstractBaseUser, name: str, tool: str) -> ToolProfile:
    """Add a registered tool (missing names can only come back through import)."""
    return profile_add_tools(owner=owner, name=name, tools=[tool])


@transaction.atomic
def profile_add_tools(*, owner: AbstractBaseUser, name: str, tools: Iterable[str]) -> ToolProfile:
    """Add several registered tools at once: all of them or, on a bad name, none."""
    wanted = tool_names_validate(list(tools))
    if not wanted:
        raise UnprocessableError("Choose at least one tool to add.")
    row = _editable(owner, name)
    unknown = [tool for tool in wanted if tool not in exposed_tool_names()]
    if unknown:
        raise NotFoundError(f"No registered tool named {', '.join(map(repr, unknown))}.")
    present = [tool for tool in wanted if tool in row.tools]
    if present:
        raise ConflictError(f"Tools already in profile {name!r}: {', '.join(map(repr, present))}.")
    row.tools = [*row.tools, *wanted]
    row.save(update_fields=["tools", "updated_at"])
    return row


@transaction.atomic
def profile_remove_tool(*, owner: AbstractBaseUser, name: str, tool: str) -> ToolProfile:
    row = _editable(owner, name)
    if tool not in row.tools:
        raise NotFoundError(f"Tool {tool!r} is not in profile {name!r}.")
    row.tools = [t for t in row.tools if t != tool]
    row.save(update_fields=["tools", "updated_at"])
    return row


@transaction.atomic
def profile_delete(*, owner: AbstractBaseUser, name: str) -> None:
    """Delete; refused while an agent profile uses it as its toolset (409)."""
    row = _editable(owner, name)
    users = [
        agent.name
        for agent in AgentProfile.objects.filter(owner=owner)
        if agent.tools.get("toolset") == row.name
    ]
    if users:
        raise ConflictError(
            f"Tool profile {name!r} is the toolset of agent profile(s) "
            f"{', '.join(repr(u) for u in users)}; change those first."
        )
    row.delete()
    UserToolSettings.objects.filter(user=owner, active_profile=name).update(
        active_profile=DEFAULT_PROFILE
    )
    tool_profile_deleted.send(sender=ToolProfile, owner=owner, name=name)


def profile_activate(*, owner: AbstractBaseUser, name: str) -> str:
    """Make ``name`` the profile the chat composer starts with."""
    if name != DEFAULT_PROFILE and not ToolProfile.objects.filter(owner=owner, name=name).exists():
        raise NotFoundError(f"No tool profile named {name!r}.")
    UserToolSettings.objects.update_or_create(user=owner, defaults={"active_profile": name})
    return name


@transaction.atomic
def profiles_import(
    *, owner: AbstractBaseUser, data: Any, replace: bool = False
) -> dict[str, list[str]]:
    """Import ``functions_meta.json``: ``{"profiles": {name: [tools]}, "active": name}``.

    ``default`` in the file is skipped (it is always every exposed tool here). An
    existing profile of the same name is overwritten; ``replace`` also deletes the
    user's profiles the file does not name. Nothing is written unless all is valid.
    """
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise UnprocessableError('Expected a JSON object with a "profiles" object.')
    profiles: dict[str, Any] = data["profiles"]
    if len(profiles) > _IMPORT_MAX_PROFILES:
        raise UnprocessableError(f"At most {_IMPORT_MAX_PROFILES} profiles can be imported.")
    cleaned: dict[str, list[str]] = {}
    for raw_name, tools in profiles.items():
        if isinstance(raw_name, str) and raw_name.strip().lower() == DEFAULT_PROFILE:
            continue
        name = profile_validate_name(raw_name)
        if name.lower() in {n.lower() for n in cleaned}:
            raise UnprocessableError(f"Profile {name!r} appears twice in the file.")
        cleaned[name] = tool_names_validate(tools)
    active = data.get("active", DEFAULT_PROFILE)
    if not isinstance(active, str) or (active != DEFAULT_PROFILE and active not in cleaned):
        raise UnprocessableError(f"Active profile {active!r} is not among the imported profiles.")
    created, updated = [], []
    for name, tools in cleaned.items():
        row = ToolProfile.objects.filter(owner=owner, name__iexact=name).first()
        if row is None:
            ToolProfile.objects.create(owner=owner, name=name, tools=tools)
            created.append(name)
        else:
            row.name, row.tools = name, tools
            row.save(update_fields=["name", "tools", "updated_at"])
            updated.append(name)
    deleted: list[str] = []
    if replace:
        for row in ToolProfile.objects.filter(owner=owner).exclude(name__in=list(cleaned)):
            profile_delete(owner=owner, name=row.name)
            deleted.append(row.name)
    profile_activate(owner=owner, name=active)
    return {"created": created, "updated": updated, "deleted": deleted}


@transaction.atomic
def tool_disable(*, name: str, by: AbstractBaseUser, reason: str) -> Tool:
    """Globally disable ``name`` (layer 5): it leaves every profile's resolved set."""
    row = tool_get(name=name)
    reason = (reason or "").strip()
    if len(reason) > 500:
        raise UnprocessableError("The reason may be at most 500 characters.")
    row.disabled, row.disabled_reason = True, reason
    row.disabled_by, row.disabled_at = by, timezone.now()
    row.save(update_fields=["disabled", "disabled_reason", "disabled_by", "disabled_at"])
    return row


@transaction.atomic
def tool_enable(*, name: str) -> Tool:
    row = tool_get(name=name)
    row.disabled, row.disabled_reason, row.disabled_by, row.disabled_at = False, "", None, None
    row.save(update_fields=["disabled", "disabled_reason", "disabled_by", "disabled_at"])
    return row


def api_token_issue(*, owner: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new API token for ``owner``: the row and the clear token (shown once)."""
    cleaned = (name or "").strip()
    if not cleaned or len(cleaned) > 100:
        raise UnprocessableError("A token name of 1-100 characters is required.")
    clear = api_token_create(user=owner, name=cleaned)
    return ApiToken.objects.get(user=owner, prefix=clear[:10], name=cleaned), clear


def api_token_revoke(*, owner: AbstractBaseUser, pk: int) -> None:
    deleted, _ = ApiToken.objects.filter(user=owner, pk=pk).delete()
    if not deleted:
        raise NotFoundError(f"No API token with id {pk!r}.")
