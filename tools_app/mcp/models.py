"""The admin-edited configuration of one MCP server.

Rows are turned into :class:`openprogram.mcp.MCPServerConfig` by
``tools_app.mcp.services`` and fed to the process-wide manager; nothing here
talks to a server.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

__all__ = ["MCPServer"]

_NAME_VALIDATOR = RegexValidator(
    regex=r"^[a-z0-9_-]{1,48}$",
    message="Use 1-48 lowercase letters, digits, '_' or '-'.",
)


class MCPServer(models.Model):
    """An MCP server whose tools register as ``mcp__<name>__<tool>``."""

    class Transport(models.TextChoices):
        STDIO = "stdio", "stdio (local command)"
        HTTP = "http", "streamable HTTP"

    name = models.CharField(max_length=48, unique=True, validators=[_NAME_VALIDATOR])
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=500, blank=True, default="")
    args = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True)
    url = models.URLField(max_length=500, blank=True, default="")
    headers = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    always_load = models.BooleanField(
        default=False,
        help_text="Ship this server's tool schemas in every request instead of deferring them.",
    )
    expose = models.BooleanField(
        default=True,
        help_text="Offer this server's tools to models. Off: they stay registered (catalog, "
        "scripts) but no model is ever offered them.",
    )
    confined = models.BooleanField(
        default=True,
        help_text="stdio: run the server under bubblewrap (its install prefix read-only, its "
        "own folder under the data directory's mcp area, no data directory). Off: it runs "
        "with the web process's full rights — files, database, secret key, network.",
    )
    network = models.BooleanField(
        default=False,
        help_text="stdio, confined: the server may reach the network (off: none at all).",
    )
    allow_tools = models.JSONField(
        default=list, blank=True, help_text="Only these tool names (empty: all)."
    )
    deny_tools = models.JSONField(default=list, blank=True, help_text="Never these tool names.")
    timeout_seconds = models.FloatField(default=60.0)
    destructive_without_approval = models.BooleanField(
        default=False,
        help_text="Let tools the server marks destructive (destructiveHint) run without asking.",
    )
    per_user_auth = models.BooleanField(
        "each user connects their own account",
        default=False,
        help_text="OAuth: every user connects their own account on the Programs page; "
        "the tools are offered only to users who did (HTTP servers only).",
    )
    oauth_client_id = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text="A client registered with the server's provider by hand "
        "(empty: register dynamically).",
    )
    oauth_client_secret = models.CharField(max_length=300, blank=True, default="")
    oauth_scope = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="Scopes to ask for (empty: what the server asks for).",
    )
    approved_fingerprints = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        verbose_name_plural = "MCP servers"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.transport == self.Transport.STDIO and not self.command:
            errors["command"] = "A stdio server needs a command."
        if self.transport == self.Transport.HTTP and not self.url:
            errors["url"] = "An HTTP server needs a URL."
        if not isinstance(self.args, list) or not all(isinstance(a, str) for a in self.args):
            errors["args"] = "args must be a JSON list of strings."
        for field_name in ("env", "headers"):
            value = getattr(self, field_name)
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                errors[field_name] = f"{field_name} must be a JSON object of strings."
        for field_name in ("allow_tools", "deny_tools"):
            value = getattr(self, field_name)
            if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                errors[field_name] = f"{field_name} must be a JSON list of tool names."
        if self.per_user_auth and self.transport != self.Transport.HTTP:
            errors["per_user_auth"] = "Only an HTTP server can have per-user accounts."
        if self.oauth_client_secret and not self.oauth_client_id:
            errors["oauth_client_secret"] = "A client secret needs its client ID."
        if self.timeout_seconds is not None and self.timeout_seconds <= 0:
            errors["timeout_seconds"] = "The timeout must be positive."
        if errors:
            raise ValidationError(errors)
