"""Prompts and resources of the shared MCP servers, for the chat composer.

Any signed-in user may list and use them: the servers are configured by an
admin for everyone (a server where each user connects an own account keeps its
prompts and resources to itself: its connections never list them). A prompt
becomes text in the composer and a resource text attached to a message, so
nothing reaches a model unless the person sends it. Only what a server listed
can be fetched: an arbitrary URI is refused before it reaches the server.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync

from openprogram.mcp import MCPCallError, MCPUnknownServerError, get_mcp_manager
from openprogram.mcp.catalog import MCPResourceError
from openprogram_site.api_errors import NotFoundError, UnprocessableError

__all__ = [
    "mcp_prompt_render",
    "mcp_prompts_list",
    "mcp_resource_read",
    "mcp_resources_list",
]


def mcp_prompts_list() -> list[dict[str, Any]]:
    return [prompt.to_dict() for prompt in get_mcp_manager().prompts()]


def mcp_resources_list() -> list[dict[str, Any]]:
    return [resource.to_dict() for resource in get_mcp_manager().resources()]


def mcp_prompt_render(*, server: str, name: str, arguments: dict[str, str]) -> str:
    """The prompt's text with ``arguments`` filled in; NotFound / Unprocessable otherwise."""
    try:
        return async_to_sync(get_mcp_manager().get_prompt)(server, name, arguments)
    except MCPUnknownServerError as exc:
        raise NotFoundError(str(exc)) from exc
    except MCPCallError as exc:
        raise UnprocessableError(str(exc)) from exc


def mcp_resource_read(*, server: str, uri: str) -> str:
    """A listed resource's text; NotFound for an unlisted one, Unprocessable when unusable."""
    try:
        return async_to_sync(get_mcp_manager().read_resource)(server, uri)
    except MCPUnknownServerError as exc:
        raise NotFoundError(str(exc)) from exc
    except (MCPCallError, MCPResourceError) as exc:
        raise UnprocessableError(str(exc)) from exc
