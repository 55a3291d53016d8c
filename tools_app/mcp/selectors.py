"""Reads about MCP servers: each stored server with its live connection status."""

from __future__ import annotations

from typing import Any

from openprogram.mcp import MCPUnknownServerError, get_mcp_accounts, get_mcp_manager
from tools_app.mcp.models import MCPServer
from tools_app.mcp.services import mcp_manager_is_live

__all__ = ["mcp_server_status", "mcp_server_statuses"]


def _offline(server: MCPServer) -> dict[str, Any]:
    return {
        "name": server.name,
        "enabled": server.enabled,
        "transport": server.transport,
        "state": "stopped",
        "error": None if server.enabled or not mcp_manager_is_live() else "disabled",
        "tools": [],
        "last_change": None,
        "retries": 0,
        "changed_tools": [],
        "fingerprints": {},
    }


def mcp_server_status(*, server: MCPServer) -> dict[str, Any]:
    """The manager's ``status()`` for this server, or a "stopped" status when it is not running.

    Keys: name, enabled, transport, state ("connecting" | "ready" | "failed" |
    "stopped", or "per-user" for a server each user connects to with their own
    account, which then also has ``user_sessions``: open, ready), error, tools (registered names), last_change (epoch seconds),
    retries, changed_tools (server tool names whose definition changed since
    approval), fingerprints.
    """
    if not mcp_manager_is_live():
        return _offline(server)
    if server.per_user_auth:
        return _per_user(server)
    try:
        return get_mcp_manager().status(server.name)
    except MCPUnknownServerError:
        return _offline(server)


def _per_user(server: MCPServer) -> dict[str, Any]:
    """A per-user server has no one state: say so, with how many users are connected."""
    status = _offline(server)
    try:
        summary = get_mcp_accounts().summary(server.name)
    except MCPUnknownServerError:
        return status
    status.update(
        state="per-user",
        tools=summary["tools"],
        user_sessions={"open": summary["users"], "ready": summary["ready"]},
        changed_tools=summary["changed_tools"],
        fingerprints=summary["fingerprints"],
    )
    return status


def mcp_server_statuses() -> dict[str, dict[str, Any]]:
    """Every stored server's status by name (for the Programs page and the admin)."""
    return {server.name: mcp_server_status(server=server) for server in MCPServer.objects.all()}
