"""The tool runtime: registry, ``@function``, the gating layers and the deferred catalog.

Importing this package registers every shipped tool (``openprogram.programs.builtin``)
and ``tool_search``. Resolution lives in :mod:`.policy`, presets in
:mod:`.toolsets`, layer 6 in :mod:`.deferred`.
"""

from __future__ import annotations

import importlib
from typing import Any

from openprogram.agent.types import AgentTool
from openprogram.programs import registry as _registry
from openprogram.programs._availability import (
    CHECK_FN_TTL_SECONDS,
    ToolUnavailable,
    clear_availability_cache,
)
from openprogram.programs.decorator import function
from openprogram.programs.deferred import (
    _loaded_deferred,
    deferred_catalog_names,
    deferred_catalog_text,
    install_loaded_deferred,
    loaded_deferred,
    mark_deferred_loaded,
    reset_loaded_deferred,
    split_tools_for_dispatch,
    tool_search,
)
from openprogram.programs.policy import (
    Layer,
    Resolution,
    ToolDecision,
    UnknownToolsetError,
    agent_tools,
    apply_tool_policy,
    resolve_tools,
)
from openprogram.programs.registry import filter_for, reset_registry
from openprogram.programs.results import ToolReturn
from openprogram.programs.tokens import count_tokens, tools_prompt_tokens
from openprogram.programs.toolsets import (
    DEFAULT_TOOLS,
    TOOLSETS,
    ToolsetCycleError,
    expand_toolset,
    known_toolset_names,
)

__all__ = [
    "CHECK_FN_TTL_SECONDS",
    "DEFAULT_TOOLS",
    "TOOLSETS",
    "Layer",
    "Resolution",
    "ToolDecision",
    "ToolReturn",
    "ToolUnavailable",
    "ToolsetCycleError",
    "UnknownToolsetError",
    "_loaded_deferred",
    "agent_tools",
    "apply_tool_policy",
    "clear_availability_cache",
    "count_tokens",
    "deferred_catalog_names",
    "deferred_catalog_text",
    "expand_toolset",
    "filter_for",
    "function",
    "get_agent_tool",
    "install_loaded_deferred",
    "known_toolset_names",
    "list_available",
    "list_registered_agent_tools",
    "loaded_deferred",
    "mark_deferred_loaded",
    "reset_loaded_deferred",
    "reset_registry",
    "resolve_tools",
    "split_tools_for_dispatch",
    "tool_search",
    "tools_prompt_tokens",
]


def get_agent_tool(name: str) -> AgentTool | None:
    """The registered tool called ``name`` (exposed or not), or None."""
    return _registry.get(name)


def list_registered_agent_tools() -> list[AgentTool]:
    """Every registered tool, expose=False ones included, in registration order."""
    return _registry.all_tools()


def list_available(**kwargs: Any) -> list[AgentTool]:
    """:func:`agent_tools` with layer 4 applied: what could run right now."""
    return resolve_tools(only_available=True, **kwargs).tools


# Last, so shipped tools may import anything above from this package while it loads.
# A broken built-in must fail loudly here, never leave a half-registered runtime.
try:
    importlib.import_module("openprogram.programs.builtin")
except Exception as exc:
    raise ImportError(
        f"the shipped tools in 'openprogram.programs.builtin' failed to import: {exc!r}"
    ) from exc
