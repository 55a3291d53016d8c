"""Fingerprints of MCP tool definitions, so a silently changed tool gets noticed.

A server can change what a tool says it does after an operator trusted it (a
"rug pull"). Each tool's canonical definition (name, description, input
schema) is hashed; the set approved for a server is stored with its
configuration, and any later difference is reported as a changed tool.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types

__all__ = ["changed_tools", "listing_fingerprints", "tool_fingerprint"]


def tool_fingerprint(*, name: str, description: str | None, input_schema: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of one tool definition."""
    canonical = json.dumps(
        {"name": name, "description": description or "", "input_schema": input_schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def changed_tools(*, approved: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Tool names whose definition differs from the approved one, or that are new since.

    Tools that disappeared are not listed: a removed tool cannot do harm.
    """
    return sorted(name for name, digest in current.items() if approved.get(name) != digest)


def listing_fingerprints(tools: Iterable[mcp_types.Tool]) -> dict[str, str]:
    """Each listed tool's fingerprint, by the server's tool name."""
    return {
        tool.name: tool_fingerprint(
            name=tool.name, description=tool.description, input_schema=tool.input_schema
        )
        for tool in tools
    }
