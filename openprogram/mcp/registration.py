"""Keeping the shared tool registry in step with what one MCP server lists.

Both the manager (shared servers) and the accounts (per-user servers) register
a server's tools under ``mcp__<server>__<tool>`` names in the process-wide
registry. ``registered`` is the server's own record of the entries it put
there; only those are ever replaced or removed, so a server can never take
over or delete a name another tool holds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from openprogram.programs import registry

if TYPE_CHECKING:
    from openprogram.mcp.tool import MCPTool

__all__ = ["registry_sync", "registry_withdraw"]

logger = logging.getLogger(__name__)


def registry_sync(registered: dict[str, MCPTool], wanted: dict[str, MCPTool]) -> None:
    """Make the registry hold exactly ``wanted`` for this server; ``registered`` follows."""
    for name in set(registered) - set(wanted):
        registry_withdraw(registered, name)
    for name, tool in wanted.items():
        current = registry.get(name)
        if current is not None and current is not registered.get(name):
            logger.warning("MCP tool %r not registered: the name is taken by %r", name, current)
            continue
        registry.register(tool, override=True)
        registered[name] = tool


def registry_withdraw(registered: dict[str, MCPTool], name: str | None = None) -> None:
    """Take this server's tool ``name`` (every one of its tools when None) out of the registry."""
    for each in [name] if name is not None else list(registered):
        tool = registered.pop(each, None)
        if tool is not None and registry.get(each) is tool:
            registry.unregister(each)
