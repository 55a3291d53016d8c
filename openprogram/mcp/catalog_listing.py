"""Reading a server's prompts and resources over its live session (the MCP SDK's types).

Listing them (paged, capped, every name and description cleaned of control
characters), and turning a fetched prompt or resource into the text a person
sends. What is kept of them is :mod:`openprogram.mcp.catalog`; only
:mod:`openprogram.mcp.connection` calls this module.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from openprogram.mcp.catalog import MAX_RESOURCE_CHARS, MCPPrompt, MCPResource, MCPResourceError

__all__ = ["list_prompts", "list_resources", "prompt_text", "resource_text"]

logger = logging.getLogger(__name__)

_MAX_PAGES = 20
_MAX_ITEMS = 500
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean(value: Any, limit: int = 500) -> str:
    text = _CONTROL_CHARS.sub("", value if isinstance(value, str) else "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _pages(fetch: Any, attribute: str, server: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    try:
        for _ in range(_MAX_PAGES):
            page = await fetch(cursor=cursor)
            items.extend(getattr(page, attribute))
            cursor = page.next_cursor
            if not cursor or len(items) >= _MAX_ITEMS:
                break
    except MCPError as exc:
        # A server that advertises the feature but fails to list it keeps its tools.
        logger.warning("MCP server %r could not list its %s: %s", server, attribute, exc)
    return items[:_MAX_ITEMS]


async def list_prompts(client: Any, server: str) -> list[MCPPrompt]:
    """The server's prompts (empty when it has none or does not offer prompts)."""
    if client.server_capabilities.prompts is None:
        return []
    prompts = []
    for prompt in await _pages(client.list_prompts, "prompts", server):
        arguments = tuple(
            {
                "name": _clean(argument.name, 64),
                "description": _clean(argument.description),
                "required": bool(argument.required),
            }
            for argument in prompt.arguments or ()
        )
        prompts.append(
            MCPPrompt(
                server=server,
                name=_clean(prompt.name, 128),
                title=_clean(prompt.title, 200),
                description=_clean(prompt.description),
                arguments=arguments,
            )
        )
    return prompts


async def list_resources(client: Any, server: str) -> list[MCPResource]:
    """The server's listed resources (templates are not offered)."""
    if client.server_capabilities.resources is None:
        return []
    return [
        MCPResource(
            server=server,
            uri=str(resource.uri)[:2000],
            name=_clean(resource.title or resource.name, 200),
            description=_clean(resource.description),
            mime_type=_clean(resource.mime_type, 100),
        )
        for resource in await _pages(client.list_resources, "resources", server)
    ]


def _block_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.TextResourceContents
    ):
        return block.resource.text
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}]"
    return f"[{getattr(block, 'type', 'content')} omitted]"


def prompt_text(result: mcp_types.GetPromptResult) -> str:
    """A prompt's messages as the text a person would send (assistant turns labelled)."""
    parts = []
    for message in result.messages:
        text = _block_text(message.content)
        parts.append(text if message.role == "user" else f"(assistant) {text}")
    return "\n\n".join(parts).strip()


def resource_text(result: mcp_types.ReadResourceResult, uri: str) -> str:
    """The resource's text; raises :class:`MCPResourceError` when it cannot be attached."""
    texts = []
    for contents in result.contents:
        if not isinstance(contents, mcp_types.TextResourceContents):
            raise MCPResourceError(f"resource {uri!r} is binary; only text can be attached")
        texts.append(contents.text)
    text = "\n".join(texts)
    if not text.strip():
        raise MCPResourceError(f"resource {uri!r} is empty")
    if len(text) > MAX_RESOURCE_CHARS:
        raise MCPResourceError(
            f"resource {uri!r} has {len(text):,} characters; at most {MAX_RESOURCE_CHARS:,} "
            "can be attached"
        )
    return text
