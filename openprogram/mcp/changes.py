"""Following a 2026-07-28 server's list changes.

Before 2026-07-28 a server announces ``notifications/*/list_changed`` whenever it
likes. From 2026-07-28 on it only sends them on a ``subscriptions/listen``
stream the client opened, so a connection that wants to notice new tools,
prompts or resources keeps one open for the session's life. The stream has no
replay: after it ends (the server closed it, or it was lost), the listing is
refreshed and a new stream opened after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack

from mcp import Client
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionLost,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["follow_list_changes", "follow_list_changes_for_session", "needs_listen"]

logger = logging.getLogger(__name__)


def needs_listen(client: Client) -> bool:
    """Whether this session only hears about list changes on a listen stream."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


async def follow_list_changes(
    client: Client,
    *,
    server: str,
    tools_changed: Callable[[], None],
    catalog_changed: Callable[[], None],
    pause: float,
) -> None:
    """Keep a listen stream open and report each change; runs until cancelled.

    All three lists are asked for whatever the server's capabilities say: servers
    that announce changes without advertising ``listChanged`` are common, and the
    server honours the subset it supports. A server without ``subscriptions/listen``
    is asked once; its lists are then only refreshed by the connection's health check.
    """
    while True:
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        tools_changed()
                    elif isinstance(event, PromptsListChanged | ResourcesListChanged):
                        catalog_changed()
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                logger.info("MCP server %r does not offer change streams", server)
                return
            logger.info("MCP server %r: change stream ended: %s", server, exc)
        except (SubscriptionLost, TimeoutError) as exc:
            logger.info("MCP server %r: change stream ended: %s", server, exc)
        except Exception:
            # A dead session is the supervisor's to notice; this task must not die loudly.
            logger.exception("MCP server %r: change stream failed", server)
        # Nothing is replayed: whatever changed meanwhile is found by listing again.
        tools_changed()
        catalog_changed()
        await asyncio.sleep(pause)


def follow_list_changes_for_session(
    stack: AsyncExitStack,
    client: Client,
    *,
    server: str,
    tools_changed: Callable[[], None],
    catalog_changed: Callable[[], None],
    pause: float,
) -> None:
    """On a 2026-07-28 session, follow its changes until ``stack`` closes (before the client)."""
    if not needs_listen(client):
        return  # older servers send list_changed notifications unasked
    task = asyncio.create_task(
        follow_list_changes(
            client,
            server=server,
            tools_changed=tools_changed,
            catalog_changed=catalog_changed,
            pause=pause,
        )
    )
    stack.push_async_callback(_cancel, task)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
