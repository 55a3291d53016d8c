"""What users edit about tools: the catalog's global disables, tool profiles, agent profiles.

``Tool`` mirrors the framework registry (kept in step by ``tools_app.catalog_sync``)
and carries the one thing staff edit on it: the layer-5 global disable.
``ToolProfile`` is the spec's layer-2b "cart"; the built-in ``default`` profile is
virtual (every exposed tool) and never stored. ``AgentProfile`` is the spec's
``agents/<id>.json``. ``UserToolSettings`` holds the profile the composer starts with
(the spec's ``functions_meta.json`` ``active`` key).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILE_NAME_MAX",
    "RESERVED_PROFILE_NAMES",
    "AgentProfile",
    "Tool",
    "ToolProfile",
    "UserToolSettings",
    "empty_agent_tools",
]

DEFAULT_PROFILE = "default"
# "none" already means "no tools at all" wherever a toolset is accepted.
RESERVED_PROFILE_NAMES = frozenset({DEFAULT_PROFILE, "none"})
PROFILE_NAME_MAX = 64


def empty_agent_tools() -> dict[str, Any]:
    return {"toolset": None, "enabled": [], "disabled": [], "allowed": []}


class Tool(models.Model):
    """One registered tool as last seen in the registry, plus its global disable."""

    class Source(models.TextChoices):
        BUILTIN = "builtin", "built-in"
        PLUGIN = "plugin", "plugin"
        AGENT = "agent", "agent method"
        MCP = "mcp", "MCP server"

    name = models.CharField(max_length=255, unique=True)
    label = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.BUILTIN)
    server = models.CharField(max_length=255, blank=True, default="")
    package = models.CharField(max_length=255, blank=True, default="")
    toolsets = models.JSONField(default=list, blank=True)
    deferred = models.BooleanField(default=False)
    requires_approval = models.BooleanField(default=False)
    exposed = models.BooleanField(default=True)
    hints = models.JSONField(
        default=dict,
        blank=True,
        help_text="What an MCP server says of the tool (read_only, destructive, open_world).",
    )
    parameters = models.JSONField(default=dict, blank=True)
    present = models.BooleanField(
        default=True, help_text="Registered in this server process right now."
    )
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    disabled = models.BooleanField(
        default=False, help_text="Globally disabled: removed from every profile (layer 5)."
    )
    disabled_reason = models.CharField(max_length=500, blank=True, default="")
    disabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["disabled"]), models.Index(fields=["source"])]

    def __str__(self) -> str:
        return self.name


class ToolProfile(models.Model):
    """A user's named set of tool names (layer 2b). Names may outlive their tools."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tool_profiles"
    )
    name = models.CharField(max_length=PROFILE_NAME_MAX)
    tools = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), "owner", name="tool_profile_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner})"


class UserToolSettings(models.Model):
    """Per-user tool preferences: the profile the chat composer starts with."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tool_settings"
    )
    active_profile = models.CharField(max_length=PROFILE_NAME_MAX, default=DEFAULT_PROFILE)

    class Meta:
        verbose_name_plural = "user tool settings"

    def __str__(self) -> str:
        return f"{self.user}: {self.active_profile}"


class AgentProfile(models.Model):
    """Per-agent settings: model, system prompt and the spec's ``tools`` field."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_profiles"
    )
    name = models.CharField(max_length=PROFILE_NAME_MAX)
    model = models.CharField(max_length=200, blank=True, default="")
    system_prompt = models.TextField(blank=True, default="")
    tools = models.JSONField(
        default=empty_agent_tools,
        blank=True,
        help_text='{"toolset": name|null, "enabled": [...], "disabled": [...], "allowed": [...]}',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), "owner", name="agent_profile_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner})"


from tools_app.mcp.account_models import MCPAccount, MCPOAuthFlow  # noqa: E402, F401
from tools_app.mcp.models import MCPServer  # noqa: E402, F401
from tools_app.policy.models import AlwaysAskMark, PolicyRule, PolicySettings  # noqa: E402, F401
