"""Layer 6: schema-deferred tools, their catalog, and ``tool_search``.

A deferred tool is offered (layers 1-5 let it through) but its JSON Schema is
not shipped until the model loads it. The dispatcher calls
:func:`install_loaded_deferred` with the turn's resolved tools, puts
:func:`deferred_catalog_text` in the system prompt, and before each provider
request :func:`split_tools_for_dispatch` decides which schemas go out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs._deferred_state import (
    _loaded_deferred,
    install_loaded_deferred,
    loaded_deferred,
    mark_deferred_loaded,
    reset_loaded_deferred,
    searchable_pool,
)
from openprogram.programs._tool_search import TOOL_SEARCH_NAME, ToolSearch, tool_search

__all__ = [
    "CATALOG_HEADER",
    "TOOL_SEARCH_NAME",
    "ToolSearch",
    "_loaded_deferred",
    "deferred_catalog_text",
    "install_loaded_deferred",
    "loaded_deferred",
    "mark_deferred_loaded",
    "reset_loaded_deferred",
    "searchable_pool",
    "split_tools_for_dispatch",
    "tool_search",
]

CATALOG_HEADER = (
    "Deferred tools available via tool_search (call tool_search to load a schema before use):"
)
_SUMMARY_CAP = 120
_NAME_CAP = 200
_MORE_LINE_RESERVE = 64
"""Room kept for the closing "... and N more" line, so the block stays within budget."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def split_tools_for_dispatch(
    tools: Sequence[AgentTool],
) -> tuple[list[AgentTool], list[AgentTool]]:
    """``(provider_tools, still_deferred)``: what goes in this request's ``tools=[]``.

    Non-deferred tools and deferred tools already loaded this turn go to the
    provider; deferred tools not yet loaded are held back (the catalog names them).
    """
    loaded = loaded_deferred()
    provider: list[AgentTool] = []
    held: list[AgentTool] = []
    for tool in tools:
        (held if tool.defer and tool.name not in loaded else provider).append(tool)
    return provider, held


def _one_line(text: str, cap: int) -> str:
    # Tool descriptions from MCP servers are untrusted: never let one add lines to the prompt.
    flat = " ".join(_CONTROL.sub(" ", text or "").split())
    return flat if len(flat) <= cap else flat[: cap - 1].rstrip() + "…"


def _group_label(tool: AgentTool) -> str:
    if tool.server:
        return f"{tool.source}: {_one_line(tool.server, 60)}"
    return tool.source


def _grouped(tools: Sequence[AgentTool]) -> dict[str, list[AgentTool]]:
    by_origin: dict[tuple[str, str | None], list[AgentTool]] = {}
    for tool in tools:
        if tool.defer:
            by_origin.setdefault((tool.source, tool.server), []).append(tool)
    groups: dict[str, list[AgentTool]] = {}
    for members in by_origin.values():
        groups.setdefault(_group_label(members[0]), []).extend(members)
    return groups


def _full_catalog(groups: dict[str, list[AgentTool]], budget_chars: int) -> str | None:
    """One line per tool, or None as soon as that would pass the budget."""
    lines = [CATALOG_HEADER]
    used = len(CATALOG_HEADER)
    for label, members in groups.items():
        lines.append(f"[{label}]")
        used += len(lines[-1]) + 1
        for tool in members:
            name = _one_line(tool.name, _NAME_CAP)
            summary = _one_line(tool.description, _SUMMARY_CAP)
            lines.append(f"- {name}: {summary}" if summary else f"- {name}")
            used += len(lines[-1]) + 1
            if used > budget_chars:
                return None
    return "\n".join(lines)


def _compact_catalog(groups: dict[str, list[AgentTool]], budget_chars: int) -> str:
    header = f"{CATALOG_HEADER} (names only; tool_search with keywords shows descriptions)"
    lines = [header]
    used = len(header) + _MORE_LINE_RESERVE
    total = sum(len(members) for members in groups.values())
    shown = 0
    for label, members in groups.items():
        pieces = [f"[{label}]"]
        width = len(pieces[0]) + 1
        for tool in members:
            name = _one_line(tool.name, _NAME_CAP)
            if used + width + len(name) + 2 > budget_chars:
                break
            pieces.append(name)
            width += len(name) + 2
        if len(pieces) > 1:
            lines.append(f"{pieces[0]} {', '.join(pieces[1:])}")
            used += len(lines[-1]) + 1
            shown += len(pieces) - 1
        if len(pieces) - 1 < len(members):
            break
    if shown < total:
        lines.append(f"... and {total - shown} more; find them with tool_search keywords.")
    return "\n".join(lines)


def deferred_catalog_text(tools: Sequence[AgentTool], *, budget_chars: int = 6000) -> str:
    """The system-prompt block naming every deferred tool in ``tools``.

    One ``- name: summary`` line per tool, grouped by source (and MCP server),
    summaries flattened to one line of at most 120 characters. When that passes
    ``budget_chars`` the block lists names only, and past that it says how many
    more exist. Empty string when nothing in ``tools`` is deferred.
    """
    groups = _grouped(tools)
    if not groups:
        return ""
    full = _full_catalog(groups, budget_chars)
    return full if full is not None else _compact_catalog(groups, budget_chars)


if registry.get(TOOL_SEARCH_NAME) is None:
    registry.register(tool_search)
