"""Ask the framework what a user's turn would offer, and what that costs in tokens.

No gating layer is written here: every decision and its explain trace come from
``openprogram.programs.resolve_tools``. This module only turns stored settings
(profiles, agent profiles, global disables) into its arguments, the same way the
chat does for a real turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.api_errors import UnprocessableError
from openprogram.agent.dispatcher import resolve_turn_tools
from openprogram.agent.events import TurnRequest
from openprogram.agent.types import AgentTool
from openprogram.programs import Resolution, UnknownToolsetError
from openprogram.programs.deferred import deferred_catalog_text
from openprogram.programs.tokens import count_tokens, tools_prompt_tokens
from openprogram.programs.toolsets import expand_toolset

__all__ = ["ProfileCost", "profile_cost", "resolve_inputs", "toolset_members"]


@dataclass(frozen=True)
class ProfileCost:
    """What a resolved tool set costs in the prompt."""

    tool_count: int
    deferred_count: int
    prompt_tokens: int
    """Schemas shipped in every request plus the deferred catalog block."""
    deferral_saved_tokens: int
    """Full schemas of the deferred tools minus their catalog lines."""


def toolset_members(toolset: str, named_profiles: dict[str, list[str]]) -> list[str]:
    """Names a toolset selects: a user profile's list, else the framework's preset."""
    if toolset in named_profiles:
        return list(named_profiles[toolset])
    return sorted(expand_toolset(toolset))


def resolve_inputs(
    inputs: dict[str, Any],
    *,
    source: str | None = None,
    attended: bool = True,
    tools_on: bool = True,
    web_search_on: bool = True,
    plan_mode: bool = False,
    can_use_context: dict[str, Any] | None = None,
) -> Resolution:
    """Resolve ``turn_resolution_inputs`` output exactly as the dispatcher resolves a turn.

    The request goes through ``openprogram.agent.dispatcher.resolve_turn_tools``, so
    the composer's toggles (tools off, web search off, plan mode) mean here what
    they mean in a real turn. Bad names (an unknown toolset, an allow list naming
    nothing registered) become a 422 with the framework's message.
    """
    request = TurnRequest(
        text="",
        profile_tools=inputs["profile_tools"],
        toolset=inputs["toolset"],
        allow=inputs["allow"],
        deny=inputs["deny"],
        disabled=inputs["disabled"],
        named_profiles=inputs["named_profiles"],
        policy=inputs.get("policy"),
        tools_on=tools_on,
        web_search_on=web_search_on,
        plan_mode=plan_mode,
        source=source,
        attended=attended,
        can_use_context=can_use_context or {},
    )
    try:
        return resolve_turn_tools(request)
    except UnknownToolsetError as exc:
        raise UnprocessableError(f"Unknown toolset or profile {exc.name!r}.") from exc
    except (TypeError, ValueError) as exc:
        raise UnprocessableError(str(exc)) from exc


def profile_cost(tools: list[AgentTool]) -> ProfileCost:
    """Token cost of sending ``tools``: shipped schemas, and what deferral saves."""
    deferred = [tool for tool in tools if tool.defer]
    shipped = [tool for tool in tools if not tool.defer]
    catalog_tokens = count_tokens(deferred_catalog_text(deferred)) if deferred else 0
    full_deferred = tools_prompt_tokens(deferred) if deferred else 0
    return ProfileCost(
        tool_count=len(tools),
        deferred_count=len(deferred),
        prompt_tokens=(tools_prompt_tokens(shipped) if shipped else 0) + catalog_tokens,
        deferral_saved_tokens=max(0, full_deferred - catalog_tokens),
    )
