"""One shared server as :class:`openprogram.mcp.manager.MCPManager` holds it.

Its config, its current connection, the tools and catalog it last listed, their
fingerprints (current and approved), and the registry entries made from them.
The manager guards every :class:`ManagedServer` with its lock; these methods
assume the caller holds it.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types

from openprogram.mcp.catalog import MCPPrompt, MCPResource
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.connection import ServerConnection
from openprogram.mcp.fingerprints import changed_tools
from openprogram.mcp.registration import registry_sync, registry_withdraw
from openprogram.mcp.supervision import ServerState
from openprogram.mcp.tool import MCPTool, ToolCaller

__all__ = ["ManagedServer", "unavailable_reason"]

logger = logging.getLogger(__name__)


class ManagedServer:
    """What the manager knows about one server besides its connection's own state."""

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.connection: ServerConnection | None = None
        self.registered: dict[str, MCPTool] = {}
        self.fingerprints: dict[str, str] = {}
        self.approved: dict[str, str] = dict(config.approved_fingerprints)
        self.listed: list[mcp_types.Tool] = []
        self.prompts: list[MCPPrompt] = []
        self.resources: list[MCPResource] = []

    def new_connection(self, **supervision: Any) -> ServerConnection:
        """A connection to this server, not started (keywords: ServerConnection's)."""
        return ServerConnection(self.config, **supervision)

    def status(self) -> dict[str, Any]:
        """``{state, error, tools, last_change, retries, protocol_version, ...}``."""
        connection = self.connection
        state: ServerState = connection.state if connection is not None else "stopped"
        return {
            "name": self.config.name,
            "enabled": self.config.enabled,
            "transport": self.config.transport,
            "state": state,
            "error": connection.error if connection is not None else None,
            "tools": sorted(self.registered),
            "last_change": connection.last_change if connection is not None else None,
            "retries": connection.retries if connection is not None else 0,
            "protocol_version": connection.protocol_version if connection else None,
            "changed_tools": changed_tools(approved=self.approved, current=self.fingerprints),
            "fingerprints": dict(self.fingerprints),
            "prompts": sorted(p.name for p in self.prompts),
            "resources": sorted(r.uri for r in self.resources),
        }

    def mark_availability(self) -> None:
        """Tell every registered tool whether its server is usable now (layer 4 reads it)."""
        reason = unavailable_reason(self.connection) if self.connection is not None else None
        for tool in self.registered.values():
            tool.unavailable_reason = reason

    def register_listed(self, caller: ToolCaller) -> None:
        """Make the registry hold exactly the allowed tools of the latest listing."""
        config = self.config
        reason = unavailable_reason(self.connection) if self.connection is not None else None
        wanted: dict[str, MCPTool] = {}
        for listed in self.listed:
            if not config.allows(listed.name):
                continue
            tool = MCPTool.from_listing(caller=caller, config=config, listed=listed)
            if tool.name in wanted:
                logger.warning(
                    "MCP server %r: tool %r collides after renaming", config.name, tool.name
                )
                continue
            tool.unavailable_reason = reason
            wanted[tool.name] = tool
        registry_sync(self.registered, wanted)

    def unregister_all(self) -> None:
        registry_withdraw(self.registered)


def unavailable_reason(connection: ServerConnection) -> str | None:
    """Why ``connection``'s tools cannot be used now (None: ready)."""
    if connection.state == "ready":
        return None
    detail = f": {connection.error}" if connection.error else ""
    return f"MCP server {connection.name!r} is {connection.state}{detail}"
