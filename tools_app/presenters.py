"""Shape selector results for the API and the Programs page (one place, both use it).

The catalog's "unavailable" badge and a tool's "why is this not offered?" come
from the framework's explain trace, never from a rule written here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from django.contrib.auth.models import AbstractBaseUser

from openprogram.programs import registry
from openprogram.programs.explain_words import plain_reason
from openprogram.programs.tokens import tools_prompt_tokens
from tools_app import selectors
from tools_app.models import DEFAULT_PROFILE, Tool
from tools_app.resolution import ProfileCost, profile_cost

__all__ = [
    "CatalogEntry",
    "CatalogState",
    "catalog_entries",
    "catalog_payload",
    "decision_for",
    "offer_gap",
    "profile_detail",
    "resolve_payload",
    "tool_detail",
    "with_words",
]

CatalogState = Literal["enabled", "disabled", "missing", "unavailable", "deferred"]


@dataclass(frozen=True)
class CatalogEntry:
    tool: Tool
    unavailable_reason: str | None
    """Layer-4 reason from the explain trace (missing key, server down...)."""

    @property
    def unavailable_words(self) -> str:
        return plain_reason("L4", self.unavailable_reason) if self.unavailable_reason else ""


def decision_for(explain: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    entry = next((entry for entry in explain if entry.get("name") == name), None)
    return with_words(entry) if entry is not None else None


def with_words(entry: dict[str, Any]) -> dict[str, Any]:
    """An explain row plus ``words``: its reason for people (the layer code stays beside)."""
    words = "" if entry.get("offered") else plain_reason(entry.get("layer"), entry["reason"])
    return {**entry, "words": words}


def offer_gap(*, profile_tools: list[str], resolved: dict[str, Any]) -> dict[str, Any]:
    """Why "Tools offered" differs from the profile's count, tool by tool.

    ``held_back``: tools in the profile a turn is not offered, each with its reason
    (``resolve_payload`` rows, which carry ``words``);
    ``added``: tools offered that the profile does not list (``tool_search``, which
    layer 6 adds whenever an offered tool loads on demand).
    """
    listed = set(profile_tools)
    offered = resolved["tools"]
    held_back = [
        entry for entry in resolved["explain"] if entry["name"] in listed and not entry["offered"]
    ]
    added = [name for name in offered if name not in listed]
    return {
        "listed": len(profile_tools),
        "offered": len(offered),
        "held_back": held_back,
        "added": added,
        "differs": bool(held_back or added),
    }


def _unavailable_reasons(owner: AbstractBaseUser) -> dict[str, str]:
    """Layer-4 rejections for every tool, from a default-profile resolution."""
    resolution = selectors.resolution_for(owner=owner, profile_name=DEFAULT_PROFILE)
    return {
        decision.name: decision.reason
        for decision in resolution.decisions
        if not decision.offered and decision.layer == "L4"
    }


def catalog_entries(
    *,
    owner: AbstractBaseUser,
    search: str = "",
    source: str | None = None,
    toolset: str | None = None,
    state: CatalogState | None = None,
) -> list[CatalogEntry]:
    row_state = state if state in ("enabled", "disabled", "missing") else None
    rows = selectors.tool_list(search=search, source=source, toolset=toolset, state=row_state)
    reasons = _unavailable_reasons(owner)
    entries = [CatalogEntry(tool=row, unavailable_reason=reasons.get(row.name)) for row in rows]
    if state == "unavailable":
        entries = [entry for entry in entries if entry.unavailable_reason]
    elif state == "deferred":
        entries = [entry for entry in entries if entry.tool.deferred]
    return entries


def _tool_fields(row: Tool) -> dict[str, Any]:
    return {
        "name": row.name,
        "label": row.label,
        "description": row.description,
        "source": row.source,
        "server": row.server,
        "package": row.package,
        "toolsets": row.toolsets,
        "deferred": row.deferred,
        "requires_approval": row.requires_approval,
        "hints": row.hints,
        "present": row.present,
        "disabled": row.disabled,
        "disabled_reason": row.disabled_reason,
        "disabled_at": row.disabled_at,
    }


def catalog_payload(**filters: Any) -> list[dict[str, Any]]:
    """``catalog_entries`` as flat dicts for the API."""
    return [
        {**_tool_fields(entry.tool), "unavailable_reason": entry.unavailable_reason}
        for entry in catalog_entries(**filters)
    ]


def tool_detail(
    *, owner: AbstractBaseUser, name: str, profile_name: str | None = None
) -> dict[str, Any]:
    """A tool with its schema and its explain entry for ``profile_name`` (default: active)."""
    row = selectors.tool_get(name=name)
    profile = profile_name or selectors.active_profile_name(owner=owner)
    resolution = selectors.resolution_for(owner=owner, profile_name=profile)
    entry = decision_for(resolution.explain(), name)
    return {
        **_tool_fields(row),
        "parameters": row.parameters,
        "profile": profile,
        "offered": name in resolution.names,
        "explain": entry,
        "schema_tokens": _schema_tokens(name),
    }


def _schema_tokens(name: str) -> int | None:
    tool = registry.get(name)
    return tools_prompt_tokens([tool]) if tool is not None else None


def _cost_dict(cost: ProfileCost) -> dict[str, int]:
    return asdict(cost)


def profile_detail(*, owner: AbstractBaseUser, name: str) -> dict[str, Any]:
    """A profile with what a chat turn using it would cost in prompt tokens."""
    view = selectors.profile_get(owner=owner, name=name)
    resolution = selectors.resolution_for(owner=owner, profile_name=name)
    return {**asdict(view), "cost": _cost_dict(profile_cost(resolution.tools))}


def resolve_payload(
    *,
    owner: AbstractBaseUser,
    profile_name: str | None,
    source: str | None = None,
    tools_on: bool = True,
    web_search_on: bool = True,
    plan_mode: bool = False,
    attended: bool = True,
    agent_profile_id: int | None = None,
) -> dict[str, Any]:
    """``POST /api/resolve``: offered and deferred names, the trace, warnings, the cost."""
    profile = profile_name or selectors.active_profile_name(owner=owner)
    resolution = selectors.resolution_for(
        owner=owner,
        profile_name=profile,
        source=source,
        attended=attended,
        tools_on=tools_on,
        web_search_on=web_search_on,
        agent_profile_id=agent_profile_id,
        plan_mode=plan_mode,
    )
    explain = resolution.explain()  # fresh copies: adding "words" changes no shared row
    for entry in explain:
        entry["words"] = "" if entry["offered"] else plain_reason(entry["layer"], entry["reason"])
    return {
        "profile": profile,
        "tools": list(resolution.names),
        "deferred": [tool.name for tool in resolution.tools if tool.defer],
        "explain": explain,
        "warnings": list(resolution.warnings),
        "cost": _cost_dict(profile_cost(resolution.tools)),
    }
