"""MCP client: configured servers' tools registered as deferred AgentTools.

``MCPManager`` connects each :class:`MCPServerConfig` in the background and
registers its tools as ``mcp__<server>__<tool>`` (``defer=True`` unless the
server is ``always_load``). :func:`get_mcp_manager` is the process-wide one a
host application (the web app) feeds; tests build their own.

Each public name is imported from its module on first access (PEP 562), so
``from openprogram.mcp import MCPServerConfig`` loads the config module alone.
The MCP SDK (~1 s of CPU to import) loads with the first server the manager or
the per-user accounts are given, or with a module that talks to a server
(``connection``, ``tool``, the ``oauth*`` modules); a process with no MCP server
never imports it (tests/integration/site/test_startup_imports.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.mcp.accounts import MCPAccounts
    from openprogram.mcp.config import (
        MCPConfigError,
        MCPServerConfig,
        MCPTransport,
        parse_mcp_servers_json,
    )
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
    from openprogram.mcp.supervision import Backoff, ServerState
    from openprogram.mcp.tool import MCPTool, mcp_tool_name

_MODULE_OF = {  # every name of __all__, by the module that defines it
    "Backoff": "supervision",
    "FingerprintListener": "manager",
    "MCPAccounts": "accounts",
    "MCPCallError": "errors",
    "MCPCallTimeoutError": "errors",
    "MCPConfigError": "config",
    "MCPManager": "manager",
    "MCPProtocolError": "errors",
    "MCPServerConfig": "config",
    "MCPServerUnavailableError": "errors",
    "MCPTool": "tool",
    "MCPTransport": "config",
    "MCPUnknownServerError": "errors",
    "ServerState": "supervision",
    "changed_tools": "fingerprints",
    "get_mcp_accounts": "process",
    "get_mcp_manager": "process",
    "mcp_tool_name": "tool",
    "parse_mcp_servers_json": "config",
    "shutdown_mcp_accounts": "process",
    "shutdown_mcp_manager": "process",
    "tool_fingerprint": "fingerprints",
}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
