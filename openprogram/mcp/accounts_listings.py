"""What per-user connections list besides tools: prompts and resources, and tool pins.

A mixin of :class:`openprogram.mcp.accounts.MCPAccounts` (kept apart so that
module stays about connections and calls).

- **Prompts and resources** are kept per user, from that user's own
  connection, and offered only to that user (``_catalogs(user)``): the server
  acts for whoever authorized it, so what it lists for alice may be alice's
  (her documents, her projects) and is never shown to bob.
- **Tool pins** work as for shared servers (:mod:`openprogram.mcp.fingerprints`):
  the first listing is trusted on first use and reported to
  ``on_fingerprints_approved`` for storing; any user's later listing whose
  definition differs from the approved one (or adds a tool) flags that tool in
  ``changed_tools`` until an operator approves the current definitions. A server
  that shows one user a different description than the others is flagged too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openprogram.mcp.catalog import MCPPrompt, MCPResource
from openprogram.mcp.fingerprints import changed_tools, listing_fingerprints
from openprogram.mcp.manager_catalog import CatalogView, ServerCatalogs, User

if TYPE_CHECKING:
    import asyncio
    import threading

    import mcp_types

    from openprogram.mcp.connection import ServerConnection

__all__ = ["AccountListings", "FingerprintListener"]

FingerprintListener = Callable[[str, dict[str, str]], None]
"""Called (in a worker thread) with ``(server, fingerprints)`` when a first listing is trusted."""


class AccountListings(ServerCatalogs):
    """Per-user prompts/resources and the server's tool pins (see the module doc)."""

    _lock: threading.RLock
    _changed: threading.Condition
    _servers: dict[str, Any]
    _owners: dict[ServerConnection, str]
    _loop: asyncio.AbstractEventLoop
    _on_fingerprints_approved: FingerprintListener | None

    def _current(self, connection: ServerConnection) -> Any:
        raise NotImplementedError

    # --- prompts and resources --------------------------------------------------------------

    def _catalogs(self, user: User) -> list[CatalogView]:
        if user is None:
            return []
        key = str(user)
        with self._lock:
            views = []
            for _, server in sorted(self._servers.items()):
                connection = server.connections.get(key)
                if connection is None or connection.state != "ready":
                    continue
                prompts, resources = server.catalogs.get(key, ((), ()))
                views.append(CatalogView(connection, tuple(prompts), tuple(resources)))
            return views

    def _listed_catalog(
        self,
        connection: ServerConnection,
        prompts: list[MCPPrompt],
        resources: list[MCPResource],
    ) -> None:
        with self._lock:
            server = self._current(connection)
            if server is not None:
                server.catalogs[self._owners[connection]] = (list(prompts), list(resources))
                self._changed.notify_all()

    # --- tool pins --------------------------------------------------------------------------

    def _pin(self, server: Any, key: str, tools: list[mcp_types.Tool]) -> None:
        """Record ``key``'s listing; the first one ever is trusted (caller holds the lock)."""
        fingerprints = listing_fingerprints(tools)
        server.fingerprints[key] = fingerprints
        server.latest = fingerprints
        if not server.approved and fingerprints:
            server.approved = dict(fingerprints)
            if self._on_fingerprints_approved is not None:
                trusted = dict(fingerprints)
                self._loop.run_in_executor(
                    None, self._on_fingerprints_approved, server.config.name, trusted
                )

    def changed_tools(self, name: str) -> list[str]:
        """Tools whose definition, in any user's listing, differs from the approved one."""
        with self._lock:
            server = self._server(name)
            found: set[str] = set()
            for fingerprints in server.fingerprints.values():
                found.update(changed_tools(approved=server.approved, current=fingerprints))
            return sorted(found)

    def approve_fingerprints(self, name: str) -> dict[str, str]:
        """Trust the tool definitions users' connections list now; returns them for storing.

        Where two users' listings disagree about a tool, the latest listing's wins
        (the other stays flagged).
        """
        with self._lock:
            server = self._server(name)
            approved: dict[str, str] = {}
            for fingerprints in server.fingerprints.values():
                approved.update(fingerprints)
            approved.update(server.latest)
            server.approved = approved
            self._changed.notify_all()
            return dict(approved)

    def _server(self, name: str) -> Any:
        raise NotImplementedError
