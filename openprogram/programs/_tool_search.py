"""The ``tool_search`` tool: how the model loads a deferred tool's schema (layer 6).

Two query forms. ``select:NAME[,NAME]`` loads exact names. Anything else is
keywords, ranked by ``_search_index.SearchIndex`` (BM25F over each deferred
tool's name, parameters and descriptions; near-duplicates moved behind distinct
hits; the index is reused while a turn's deferred tools are the same objects). Every hit is marked loaded, so its full schema is in the very next provider
request. The searchable pool is the turn's
resolved tool list: a tool vetoed by layers 2-5 is never found, never loaded,
and never suggested as a "closest match".
"""

from __future__ import annotations

import asyncio
import difflib
import json
from typing import Any

from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.programs import registry
from openprogram.programs._deferred_state import current_state, mark_deferred_loaded
from openprogram.programs._search_index import SearchIndex as _SearchIndex

__all__ = ["TOOL_SEARCH_NAME", "ToolSearch", "tool_search"]

TOOL_SEARCH_NAME = "tool_search"
_SELECT_PREFIX = "select:"
_MAX_RESULTS_CAP = 20

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": (
                "Keywords describing the capability you need (e.g. 'create github issue'), "
                "or 'select:NAME[,NAME]' to load exact tool names from the deferred catalog."
            ),
        },
        "select": {
            "type": "string",
            "description": "Exact tool name(s) to load, comma-separated (same as 'select:NAME').",
        },
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": _MAX_RESULTS_CAP,
            "default": 5,
            "description": "How many tools to load for a keyword query.",
        },
    },
    "minProperties": 1,
    "additionalProperties": False,
}


_open_index: tuple[int, _SearchIndex] | None = None


def _candidates() -> tuple[dict[str, AgentTool], _SearchIndex]:
    """Tools ``select:`` may load, and the keyword index over the deferred ones."""
    global _open_index
    state = current_state()
    if state is not None and state.pool is not None:
        if not isinstance(state.search_index, _SearchIndex):
            # Turn after turn the pool is usually the same tools: reuse their index.
            deferred = [t for t in state.pool.values() if t.defer]
            state.search_index = _SearchIndex.for_tools(deferred)
        return state.pool, state.search_index
    exposed = {tool.name: tool for tool in registry.filter_for()}
    version = registry.registry_version()
    if _open_index is None or _open_index[0] != version:
        _open_index = (version, _SearchIndex.build([t for t in exposed.values() if t.defer]))
    return exposed, _open_index[1]


def _describe(tool: AgentTool) -> str:
    schema = json.dumps(tool.parameters, indent=2, sort_keys=True, ensure_ascii=False)
    return f"## {tool.name}\n{tool.description.strip()}\nParameters (JSON Schema):\n{schema}"


def _loaded_text(tools: list[AgentTool]) -> str:
    header = (
        f"Loaded {len(tools)} tool(s); call them directly from your next step on:"
        if tools
        else "No tools loaded."
    )
    return "\n\n".join([header, *(_describe(tool) for tool in tools)])


def _parse(args: dict[str, Any] | str) -> tuple[str, int]:
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON: {exc.msg}") from exc
    if not isinstance(args, dict):
        raise ValueError("arguments must be an object with a 'query' string")
    unknown = sorted(set(args) - {"query", "select", "max_results"})
    if unknown:
        raise ValueError(f"unexpected argument(s) {', '.join(map(repr, unknown))}")
    select = args.get("select")
    if select is not None:
        if not isinstance(select, str) or not select.strip():
            raise ValueError("'select' must be a non-empty string of tool names")
        return f"{_SELECT_PREFIX}{select.strip()}", _MAX_RESULTS_CAP
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError("give 'query' (keywords) or 'select' (exact tool names)")
    limit = args.get("max_results", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"'max_results' must be a positive integer, got {limit!r}")
    return query.strip(), min(limit, _MAX_RESULTS_CAP)


def _select(names: list[str], pool: dict[str, AgentTool]) -> AgentToolResult:
    found = [pool[name] for name in names if name in pool]
    unknown = [name for name in names if name not in pool]
    mark_deferred_loaded(tool.name for tool in found)
    parts = [_loaded_text(found)] if found else []
    for name in unknown:
        closest = difflib.get_close_matches(name, list(pool), n=3, cutoff=0.5)
        hint = f" Closest matches: {', '.join(closest)}." if closest else ""
        parts.append(f"Unknown tool {name!r}: it is not in this turn's tool catalog.{hint}")
    return AgentToolResult(
        content="\n\n".join(parts),
        is_error=bool(unknown),
        details={"loaded": [tool.name for tool in found], "unknown": unknown},
    )


def _search(query: str, limit: int, index: _SearchIndex) -> AgentToolResult:
    hits = index.rank(query, limit)
    if not hits:
        names = [tool.name for tool in index.tools]
        closest = difflib.get_close_matches(query, names, n=3, cutoff=0.4)
        hint = f" Closest names: {', '.join(closest)}." if closest else ""
        return AgentToolResult(
            content=f"No deferred tool matches {query!r}.{hint} Try other keywords.",
            details={"loaded": [], "unknown": []},
        )
    mark_deferred_loaded(tool.name for tool in hits)
    return AgentToolResult(
        content=_loaded_text(hits),
        details={"loaded": [tool.name for tool in hits], "unknown": []},
    )


class ToolSearch(AgentTool):
    """Finds deferred tools and loads their schemas for the next provider request."""

    def __init__(self) -> None:
        super().__init__(
            name=TOOL_SEARCH_NAME,
            description=(
                "Load deferred tools listed in the deferred tool catalog. Query with keywords "
                "to find matching tools, or 'select:NAME[,NAME]' to load exact names. Loaded "
                "tools' full schemas are returned and become callable on your next step."
            ),
            parameters=_PARAMETERS,
            label="Tool search",
            source="builtin",
        )

    async def execute(
        self,
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        try:
            query, limit = _parse(args)
        except ValueError as exc:
            return AgentToolResult(content=f"tool_search: {exc}", is_error=True)
        pool, index = _candidates()
        if query.lower().startswith(_SELECT_PREFIX):
            names = [n.strip() for n in query[len(_SELECT_PREFIX) :].split(",") if n.strip()]
            if not names:
                return AgentToolResult(
                    content="tool_search: 'select:' needs at least one tool name", is_error=True
                )
            return _select(list(dict.fromkeys(names)), pool)
        return _search(query, limit, index)


tool_search = ToolSearch()
