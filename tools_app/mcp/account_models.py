"""A user's own connection to an MCP server that needs one (``MCPServer.per_user_auth``).

The OAuth tokens, the client registration and an authorization in progress are
stored sealed (see ``tools_app.mcp.token_crypto``): a database dump holds no
usable token or PKCE verifier, and no page or API ever shows them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tools_app.mcp.models import MCPServer

__all__ = ["MCPAccount", "MCPOAuthFlow"]


class MCPAccount(models.Model):
    """``user``'s authorization for ``server``: sealed tokens and client registration."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_accounts"
    )
    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="accounts")
    sealed_tokens = models.TextField(blank=True, default="")
    sealed_client = models.TextField(blank=True, default="")
    connected = models.DateTimeField(null=True, blank=True)
    revocation_endpoint = models.URLField(blank=True, default="", max_length=2000)
    """The provider's RFC 7009 endpoint from its metadata, asked on Disconnect (empty: none)."""
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "server"], name="one_mcp_account_per_server")
        ]
        verbose_name = "MCP account"

    def __str__(self) -> str:
        return f"{self.user} @ {self.server}"


class MCPOAuthFlow(models.Model):
    """A Connect waiting for the provider's callback, which any web process may receive.

    Found by the SHA-256 of its ``state`` (the state itself is not stored);
    ``sealed_pending`` holds the PKCE verifier and what finishing needs, and is
    emptied when the callback uses it. A used row stays until ``expires`` so a
    replayed callback is told it was used; expired rows are deleted.
    """

    state_digest = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    server = models.ForeignKey(MCPServer, on_delete=models.CASCADE, related_name="oauth_flows")
    sealed_pending = models.TextField(blank=True, default="")
    expires = models.DateTimeField(db_index=True)
    used = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "MCP authorization in progress"

    def __str__(self) -> str:
        return f"{self.user} @ {self.server} (until {self.expires:%H:%M:%S})"
