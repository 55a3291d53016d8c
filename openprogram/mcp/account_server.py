"""One per-user server as :class:`openprogram.mcp.accounts.MCPAccounts` holds it.

Its config, each connected user's connection, the tools last listed and the
registry entries made from them, each user's prompts and resources, and the
tool pins. The accounts guard every :class:`AccountServer` with their lock;
these methods assume the caller holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types

from openprogram.mcp.catalog import MCPPrompt, MCPResource
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.connection import ServerConnection
from openprogram.mcp.tool import MCPTool, ToolCaller

__all__ = ["AccountServer"]


@dataclass
class AccountServer:
    """What the accounts know about one per-user server (see the module doc)."""

    config: MCPServerConfig
    connections: dict[str, ServerConnection] = field(default_factory=dict)
    registered: dict[str, MCPTool] = field(default_factory=dict)
    listed: list[mcp_types.Tool] = field(default_factory=list)
    catalogs: dict[str, tuple[list[MCPPrompt], list[MCPResource]]] = field(default_factory=dict)
    """Each user's own prompts and resources."""
    fingerprints: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each user's latest listing's tool fingerprints."""
    latest: dict[str, str] = field(default_factory=dict)
    approved: dict[str, str] = field(default_factory=dict)

    def new_connection(self, **supervision: Any) -> ServerConnection:
        """A connection to this server, not started (keywords: ServerConnection's)."""
        return ServerConnection(self.config, **supervision)

    def listed_tools(
        self, *, caller: ToolCaller, gate: Callable[[str], Callable[..., bool]]
    ) -> dict[str, MCPTool]:
        """The allowed tools of the latest listing (none while disabled), each gated.

        ``gate(server)`` gives the ``can_use`` that lets only a user whose own
        connection is ready use the tool.
        """
        config = self.config
        wanted: dict[str, MCPTool] = {}
        if config.enabled:
            for listed in self.listed:
                if not config.allows(listed.name):
                    continue
                tool = MCPTool.from_listing(caller=caller, config=config, listed=listed)
                tool.can_use = gate(config.name)
                wanted.setdefault(tool.name, tool)
        return wanted
