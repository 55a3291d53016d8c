"""What the Programs page shows about a user's own MCP accounts (never the tokens)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from openprogram.mcp import get_mcp_accounts
from openprogram.mcp.errors import MCPUnknownServerError
from tools_app.mcp.account_models import MCPAccount
from tools_app.mcp.models import MCPServer

__all__ = ["MCPAccountRow", "mcp_account_rows"]


@dataclass(frozen=True)
class MCPAccountRow:
    server: str
    connected: bool
    """Tokens are stored for this user."""
    state: str
    """This user's session: ready, connecting, failed or stopped."""
    error: str | None


def mcp_account_rows(*, user: AbstractBaseUser) -> list[MCPAccountRow]:
    """Every enabled per-user server, with ``user``'s connection to it."""
    servers = MCPServer.objects.filter(per_user_auth=True, enabled=True).order_by("name")
    connected = set(
        MCPAccount.objects.filter(user=user)
        .exclude(sealed_tokens="")
        .values_list("server__name", flat=True)
    )
    accounts = get_mcp_accounts()
    rows = []
    for server in servers:
        try:
            status = accounts.status(server.name, user.pk)
        except MCPUnknownServerError:
            status = {"state": "stopped", "error": None}
        rows.append(
            MCPAccountRow(
                server=server.name,
                connected=server.name in connected,
                state=status["state"],
                error=status["error"],
            )
        )
    return rows
