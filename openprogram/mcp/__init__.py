"""MCP client: configured servers' tools registered as deferred AgentTools.

``MCPManager`` connects each :class:`MCPServerConfig` in the background and
registers its tools as ``mcp__<server>__<tool>`` (``defer=True`` unless the
server is ``always_load``). :func:`get_mcp_manager` is the process-wide one a
host application (the web app) feeds; tests build their own.
"""

from __future__ import annotations

from openprogram.mcp.accounts import MCPAccounts
from openprogram.mcp.config import (
    MCPConfigError,
    MCPServerConfig,
    MCPTransport,
    parse_mcp_servers_json,
)
from openprogram.mcp.connection import Backoff, ServerState
from openprogram.mcp.errors import (
    MCPCallError,
    MCPCallTimeoutError,
    MCPProtocolError,
    MCPServerUnavailableError,
    MCPUnknownServerError,
)
from openprogram.mcp.fingerprints import changed_tools, tool_fingerprint
from openprogram.mcp.manager import FingerprintListener, MCPManager
from openprogram.mcp.process import (
    get_mcp_accounts,
    get_mcp_manager,
    shutdown_mcp_accounts,
    shutdown_mcp_manager,
)
from openprogram.mcp.tool import MCPTool, mcp_tool_name

__all__ = [
    "Backoff",
    "FingerprintListener",
    "MCPAccounts",
    "MCPCallError",
    "MCPCallTimeoutError",
    "MCPConfigError",
    "MCPManager",
    "MCPProtocolError",
    "MCPServerConfig",
    "MCPServerUnavailableError",
    "MCPTool",
    "MCPTransport",
    "MCPUnknownServerError",
    "ServerState",
    "changed_tools",
    "get_mcp_accounts",
    "get_mcp_manager",
    "mcp_tool_name",
    "parse_mcp_servers_json",
    "shutdown_mcp_accounts",
    "shutdown_mcp_manager",
    "tool_fingerprint",
]
