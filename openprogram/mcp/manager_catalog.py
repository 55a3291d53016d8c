"""Prompts and resources: what connected servers list, fetched on demand, for whom.

Mixins of :class:`openprogram.mcp.manager.MCPManager` (shared servers, anyone
may use them) and :class:`openprogram.mcp.accounts.MCPAccounts` (per-user
servers: only the user whose own connection listed them). Each connection
reports its prompts and resources after connecting and on ``list_changed``;
:class:`ServerCatalogs` reads and fetches them through ``_catalogs(user)``, the
one place both rules meet: only a listed prompt or URI is ever sent to a
server (no ``file:///etc/passwd`` through a filesystem server), and only
through a connection the asking user may use.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.mcp.catalog import MCPPrompt, MCPResource
from openprogram.mcp.errors import MCPProtocolError, MCPUnknownServerError

if TYPE_CHECKING:
    import threading

    from openprogram.mcp.connection import ServerConnection

__all__ = ["CatalogView", "ServerCatalogs", "SharedCatalogs"]

User = str | int | None


@dataclass(frozen=True)
class CatalogView:
    """One ready connection's prompts and resources, as last listed."""

    connection: ServerConnection
    prompts: tuple[MCPPrompt, ...]
    resources: tuple[MCPResource, ...]


class ServerCatalogs:
    """Listing and fetching over the views ``_catalogs(user)`` gives (see the module doc)."""

    _loop: asyncio.AbstractEventLoop

    def _catalogs(self, user: User) -> list[CatalogView]:
        """The ready connections ``user`` may use, by server name."""
        raise NotImplementedError

    def prompts(self, user: User = None) -> list[MCPPrompt]:
        """The prompts of every server ``user`` may use, as last listed."""
        return [prompt for view in self._catalogs(user) for prompt in view.prompts]

    def resources(self, user: User = None) -> list[MCPResource]:
        """The listed resources of every server ``user`` may use."""
        return [resource for view in self._catalogs(user) for resource in view.resources]

    async def get_prompt(
        self, server: str, name: str, arguments: dict[str, str], *, user: User = None
    ) -> str:
        """A listed prompt filled in with ``arguments``, as text; raises MCPCallError."""
        view = self._view(server, user)
        prompt = next((p for p in view.prompts if p.name == name), None) if view else None
        if view is None or prompt is None:
            raise MCPUnknownServerError(f"no prompt {name!r} on a connected server {server!r}")
        missing = [
            a["name"] for a in prompt.arguments if a["required"] and not arguments.get(a["name"])
        ]
        if missing:
            raise MCPProtocolError(f"prompt {name!r} needs the arguments {missing}")
        return await self._on_loop(view.connection.get_prompt_text(name, arguments))

    async def read_resource(self, server: str, uri: str, *, user: User = None) -> str:
        """A listed resource's text; raises MCPCallError, or MCPResourceError (not text, too big).

        Only listed resources: a URI the server did not offer (``file:///etc/...``) is refused.
        """
        view = self._view(server, user)
        if view is None or not any(r.uri == uri for r in view.resources):
            raise MCPUnknownServerError(f"no resource {uri!r} on a connected server {server!r}")
        return await self._on_loop(view.connection.read_resource_text(uri))

    def _view(self, server: str, user: User) -> CatalogView | None:
        return next((v for v in self._catalogs(user) if v.connection.name == server), None)

    async def _on_loop(self, work: Any) -> Any:
        if _running_loop() is self._loop:
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))


class SharedCatalogs(ServerCatalogs):
    """The manager's servers: configured by an operator for everyone, so any user sees them."""

    _lock: threading.RLock
    _changed: threading.Condition
    _servers: dict[str, Any]

    def _catalogs(self, user: User) -> list[CatalogView]:
        with self._lock:
            return [
                CatalogView(entry.connection, tuple(entry.prompts), tuple(entry.resources))
                for _, entry in sorted(self._servers.items())
                if entry.connection is not None and entry.connection.state == "ready"
            ]

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
