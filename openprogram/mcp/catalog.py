"""A server's prompts and resources, as they are kept once listed.

Prompts become slash commands in a chat composer and resources things a person
attaches to a message; both reach the model only because the person chose to
send them. Names, descriptions and texts are untrusted server data: they are
cleaned and capped when listed, and a resource too large or not text is refused
with a message instead of being cut silently. Listing and fetching talk to the
server through the MCP SDK (:mod:`openprogram.mcp.catalog_listing`); this module
imports none of it, so the manager can hold and offer the results without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_RESOURCE_CHARS", "MCPPrompt", "MCPResource", "MCPResourceError"]

MAX_RESOURCE_CHARS = 200_000
"""A resource attached to a message: bigger ones are refused (the message limit is near)."""


class MCPResourceError(ValueError):
    """A resource that cannot be attached (binary, too large, empty)."""


@dataclass(frozen=True)
class MCPPrompt:
    server: str
    name: str
    title: str
    description: str
    arguments: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """``{"name", "description", "required"}`` per argument."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [dict(argument) for argument in self.arguments],
        }


@dataclass(frozen=True)
class MCPResource:
    server: str
    uri: str
    name: str
    description: str
    mime_type: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mime_type": self.mime_type,
        }
