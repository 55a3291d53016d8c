"""Failures of MCP calls, each its own type so callers can tell them apart."""

from __future__ import annotations

__all__ = [
    "MCPCallError",
    "MCPCallTimeoutError",
    "MCPProtocolError",
    "MCPServerUnavailableError",
    "MCPUnknownServerError",
]


class MCPCallError(RuntimeError):
    """A tool call could not produce a result from its MCP server."""


class MCPUnknownServerError(MCPCallError, LookupError):
    """No server with that name is configured in the manager."""


class MCPServerUnavailableError(MCPCallError):
    """The server is not connected (failed, connecting, stopped or lost mid-call)."""


class MCPCallTimeoutError(MCPCallError, TimeoutError):
    """The server did not answer within the per-server timeout."""


class MCPProtocolError(MCPCallError):
    """The server answered with a JSON-RPC error instead of a tool result."""
