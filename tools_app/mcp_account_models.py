"""A user's own connection to an MCP server that needs one (``MCPServer.per_user_auth``).

The OAuth tokens and the client registration are stored sealed (see
``tools_app.mcp_token_crypto``): a database dump holds no usable token, and no
page or API ever shows them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tools_app.mcp_models import MCPServer

__all__ = ["MCPAccount"]


class MCPAccount(models.Model):
    """``user``'s authorization for ``server``: sealed tokens and client registration."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_accounts"
    )
    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="accounts")
    sealed_tokens = models.TextField(blank=True, default="")
    sealed_client = models.TextField(blank=True, default="")
    connected = models.DateTimeField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "server"], name="one_mcp_account_per_server")
        ]
        verbose_name = "MCP account"

    def __str__(self) -> str:
        return f"{self.user} @ {self.server}"
