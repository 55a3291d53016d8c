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
    "COMPACT_NOTE",
    "HARD_CAP_FACTOR",
    "TOOL_SEARCH_NAME",
    "ToolSearch",
    "_loaded_deferred",
    "deferred_catalog_names",
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
COMPACT_NOTE = (
    "Names only, too many to describe (tool_search with keywords shows descriptions). "
    "A group's names may share a prefix written once: mcp__gh__{create_issue, list_prs} "
    "means the tools mcp__gh__create_issue and mcp__gh__list_prs; call them by the full name."
)
HARD_CAP_FACTOR = 4
"""The names-only form may grow to this many times ``budget_chars`` before it truncates."""
_SUMMARY_CAP = 120
_NAME_CAP = 200
_LABEL_CAP = 60
_MORE_LINE_RESERVE = 64
"""Room kept for the closing "+N more" line, so the block stays within the hard cap."""
_PREFIX_SEPARATOR = "__"
"""Only namespace prefixes (``mcp__<server>__``) are factored out, never part of a word."""
_BRACKETS = str.maketrans("[]", "()")
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
    label = f"{tool.source}: {tool.server}" if tool.server else tool.source
    # A bracket in an (untrusted) server name must not end the group label early.
    return _one_line(label, _LABEL_CAP).translate(_BRACKETS)


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


def _shared_prefix(names: list[str]) -> str:
    """The longest ``...__`` prefix every name has and none equals, or "" (one name: "")."""
    if len(names) < 2:
        return ""
    # The common prefix of the whole list is that of its smallest and largest names.
    low, high = min(names), max(names)
    pairs = enumerate(zip(low, high, strict=False))
    size = next((i for i, (a, b) in pairs if a != b), len(low))
    common = low[:size]
    cut = common.rfind(_PREFIX_SEPARATOR)
    if cut <= 0:
        return ""
    prefix = common[: cut + len(_PREFIX_SEPARATOR)]
    # A tool named exactly the prefix would vanish into "{, ...}": keep such a group plain.
    return "" if prefix in names else prefix


def _group_line(label: str, names: list[str]) -> str:
    prefix = _shared_prefix(names)
    if not prefix:
        return f"[{label}] {', '.join(names)}"
    return f"[{label}] {prefix}{{{', '.join(name[len(prefix) :] for name in names)}}}"


def _compact_catalog(groups: dict[str, list[AgentTool]], hard_cap: int) -> str:
    """Every name, grouped, prefixes factored out; past ``hard_cap`` it ends with "+N more".

    Names are flattened only until the cap is reached, so 10,000 deferred tools
    cost no more than the few hundred the block can hold.
    """
    lines = [CATALOG_HEADER, COMPACT_NOTE]
    room = hard_cap - sum(len(line) + 1 for line in lines) - _MORE_LINE_RESERVE
    total = sum(len(members) for members in groups.values())
    shown = 0
    for label, members in groups.items():
        # Worst case per name is its length plus ", "; the label and braces come on top.
        room -= len(label) + 6
        names: list[str] = []
        for tool in members:
            name = _one_line(tool.name, _NAME_CAP)
            if room - len(name) - 2 < 0:
                break
            names.append(name)
            room -= len(name) + 2
        if names:
            lines.append(_group_line(label, names))
            shown += len(names)
        if len(names) < len(members):
            break
    if shown < total:
        lines.append(f"+{total - shown} more: use tool_search with keywords to find them.")
    return "\n".join(lines)


def deferred_catalog_text(tools: Sequence[AgentTool], *, budget_chars: int = 6000) -> str:
    """The system-prompt block naming every deferred tool in ``tools``.

    One ``- name: summary`` line per tool, grouped by source (and MCP server),
    summaries flattened to one line of at most 120 characters. When that passes
    ``budget_chars`` the block switches to names only: one line per group, with
    the group's shared ``mcp__<server>__`` prefix written once
    (``mcp__gh__{create_issue, list_prs}``, explained in the block), still naming
    every tool. Only when even the names pass ``HARD_CAP_FACTOR`` times the budget
    does it stop and end with ``+N more: use tool_search ...``. Empty string
    when nothing in ``tools`` is deferred.
    """
    groups = _grouped(tools)
    if not groups:
        return ""
    full = _full_catalog(groups, budget_chars)
    if full is not None:
        return full
    return _compact_catalog(groups, budget_chars * HARD_CAP_FACTOR)


def _listed_names(body: str) -> list[str]:
    prefix, brace, rest = body.partition("{")
    if brace and rest.endswith("}"):
        return [prefix + short for short in rest[:-1].split(", ")]
    return body.split(", ")


def deferred_catalog_names(text: str) -> list[str]:
    """The exact callable names a :func:`deferred_catalog_text` block lists, in order.

    Reads both forms (``- name: summary`` lines, and names-only group lines with
    their ``prefix{a, b}`` shorthand expanded), so code that acts on the catalog
    (the offline model, tests) never has to know the layout.
    """
    names: list[str] = []
    for line in text.splitlines()[1:]:
        if line.startswith("- "):
            names.append(line[2:].partition(": ")[0])
        elif line.startswith("[") and "] " in line:
            names.extend(_listed_names(line.partition("] ")[2]))
    return names


if registry.get(TOOL_SEARCH_NAME) is None:
    registry.register(tool_search)
