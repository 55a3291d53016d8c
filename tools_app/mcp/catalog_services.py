"""Prompts and resources of MCP servers, for the chat composer.

A shared server's prompts and resources are for every signed-in user (an admin
configured it for everyone). A server where each user connects an own account
acts for that user, so its prompts and resources are offered only to the user
whose own connection listed them (the framework's ``MCPAccounts`` decides, by
user). A prompt becomes text in the composer and a resource text attached to a
message, so nothing reaches a model unless the person sends it. Only what a
server listed can be fetched: an arbitrary URI is refused before it reaches
the server.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.models import AbstractBaseUser

from core.api_errors import NotFoundError, UnprocessableError
from openprogram.mcp import MCPCallError, MCPUnknownServerError, get_mcp_accounts, get_mcp_manager
from openprogram.mcp.catalog import MCPResourceError
from openprogram.mcp.manager_catalog import ServerCatalogs

__all__ = [
    "mcp_prompt_render",
    "mcp_prompts_list",
    "mcp_resource_read",
    "mcp_resources_list",
]


def mcp_prompts_list(*, user: AbstractBaseUser) -> list[dict[str, Any]]:
    """The shared servers' prompts, then ``user``'s own accounts' prompts."""
    shared = get_mcp_manager().prompts()
    own = get_mcp_accounts().prompts(user.pk)
    return [prompt.to_dict() for prompt in [*shared, *own]]


def mcp_resources_list(*, user: AbstractBaseUser) -> list[dict[str, Any]]:
    """The shared servers' resources, then ``user``'s own accounts' resources."""
    shared = get_mcp_manager().resources()
    own = get_mcp_accounts().resources(user.pk)
    return [resource.to_dict() for resource in [*shared, *own]]


def _catalogs_of(server: str) -> ServerCatalogs:
    """Where ``server`` runs: per-user accounts, or the shared manager."""
    accounts = get_mcp_accounts()
    return accounts if server in accounts.names() else get_mcp_manager()


def mcp_prompt_render(
    *, user: AbstractBaseUser, server: str, name: str, arguments: dict[str, str]
) -> str:
    """The prompt's text with ``arguments`` filled in; NotFound / Unprocessable otherwise."""
    try:
        render = _catalogs_of(server).get_prompt
        return async_to_sync(render)(server, name, arguments, user=user.pk)
    except MCPUnknownServerError as exc:
        raise NotFoundError(str(exc)) from exc
    except MCPCallError as exc:
        raise UnprocessableError(str(exc)) from exc


def mcp_resource_read(*, user: AbstractBaseUser, server: str, uri: str) -> str:
    """A listed resource's text; NotFound for an unlisted one, Unprocessable when unusable."""
    try:
        return async_to_sync(_catalogs_of(server).read_resource)(server, uri, user=user.pk)
    except MCPUnknownServerError as exc:
        raise NotFoundError(str(exc)) from exc
    except (MCPCallError, MCPResourceError) as exc:
        raise UnprocessableError(str(exc)) from exc
