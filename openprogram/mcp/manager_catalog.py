"""The manager's prompts and resources: what connected servers list, fetched on demand.

A mixin of :class:`openprogram.mcp.manager.MCPManager` (kept apart so the manager
stays about connections and tools). Each connection reports its prompts and
resources after connecting and on ``list_changed``; these methods read them and
fetch one, bridging to the manager's loop like a tool call.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from openprogram.mcp.catalog import MCPPrompt, MCPResource, prompt_text, resource_text
from openprogram.mcp.errors import (
    MCPProtocolError,
    MCPServerUnavailableError,
    MCPUnknownServerError,
)

if TYPE_CHECKING:
    import threading

    from openprogram.mcp.connection import ServerConnection

__all__ = ["ServerCatalogs"]


class ServerCatalogs:
    """Prompts and resources across the manager's servers (see the module doc)."""

    _lock: threading.RLock
    _changed: threading.Condition
    _servers: dict[str, Any]
    _loop: asyncio.AbstractEventLoop

    # --- prompts and resources (any thread; the async ones from any loop) -----------------

    def _ready_entries(self) -> list[Any]:
        with self._lock:
            return [
                entry
                for _, entry in sorted(self._servers.items())
                if entry.connection is not None and entry.connection.state == "ready"
            ]

    def prompts(self) -> list[MCPPrompt]:
        """Every connected server's prompts, as last listed."""
        return [prompt for entry in self._ready_entries() for prompt in entry.prompts]

    def resources(self) -> list[MCPResource]:
        """Every connected server's listed resources."""
        return [resource for entry in self._ready_entries() for resource in entry.resources]

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """A listed prompt filled in with ``arguments``, as text; raises MCPCallError."""
        prompt = next((p for p in self.prompts() if (p.server, p.name) == (server, name)), None)
        if prompt is None:
            raise MCPUnknownServerError(f"no prompt {name!r} on a connected server {server!r}")
        missing = [
            a["name"] for a in prompt.arguments if a["required"] and not arguments.get(a["name"])
        ]
        if missing:
            raise MCPProtocolError(f"prompt {name!r} needs the arguments {missing}")
        connection = self._connection(server)
        result = await self._on_loop(
            connection.request(f"prompt {name!r}", lambda c: c.get_prompt(name, arguments))
        )
        return prompt_text(result)

    async def read_resource(self, server: str, uri: str) -> str:
        """A listed resource's text; raises MCPCallError, or MCPResourceError (not text, too big).

        Only listed resources: a URI the server did not offer (``file:///etc/...``) is refused.
        """
        if not any((r.server, r.uri) == (server, uri) for r in self.resources()):
            raise MCPUnknownServerError(f"no resource {uri!r} on a connected server {server!r}")
        connection = self._connection(server)
        result = await self._on_loop(
            connection.request(f"resource {uri!r}", lambda c: c.read_resource(uri))
        )
        return resource_text(result, uri)

    def _connection(self, server: str) -> ServerConnection:
        with self._lock:
            entry = self._servers.get(server)
            connection = entry.connection if entry is not None else None
        if connection is None:
            raise MCPServerUnavailableError(f"MCP server {server!r} is not connected")
        return connection

    async def _on_loop(self, work: Any) -> Any:
        if _running_loop() is self._loop:
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    def _connection_listed_catalog(
        self,
        connection: ServerConnection,
        prompts: list[MCPPrompt],
        resources: list[MCPResource],
    ) -> None:
        with self._lock:
            entry = self._servers.get(connection.name)
            if entry is not None and entry.connection is connection:
                entry.prompts, entry.resources = list(prompts), list(resources)
                self._changed.notify_all()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
