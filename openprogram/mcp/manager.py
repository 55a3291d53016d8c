"""The MCP manager: every configured server's connection, on one background loop.

Connections run as tasks on an event loop of their own, in a daemon thread,
so no host loop (daphne's, a test's, a CLI's) is ever blocked by or tied to a
server. Every public method may be called from any thread or loop: the sync
ones hand work to the manager loop, :meth:`MCPManager.call` bridges with
``run_coroutine_threadsafe`` + ``wrap_future``.

Tools register in the shared registry as :class:`MCPTool` entries. When a
server is down its tools stay registered with ``unavailable_reason`` set
(layer 4 hides them with that reason) instead of vanishing; disabling or
removing a server unregisters them. What the manager holds per server, and
how its tools enter and leave the registry, is :mod:`.managed_server`'s.

A manager with no server configured holds no connection and needs nothing of the
MCP SDK: the SDK is imported with the first server added (:func:`_managed`), so a
web process with no MCP server never pays for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.errors import (
    MCPServerUnavailableError,
    MCPUnknownServerError,
)
from openprogram.mcp.fingerprints import listing_fingerprints
from openprogram.mcp.manager_catalog import SharedCatalogs
from openprogram.mcp.supervision import Backoff

if TYPE_CHECKING:
    import httpx2
    import mcp_types

    from openprogram.mcp.connection import ServerConnection
    from openprogram.mcp.elicitation import CallElicitor
    from openprogram.mcp.managed_server import ManagedServer
    from openprogram.mcp.tool import ProgressFn

__all__ = ["AuthFactory", "FingerprintListener", "MCPManager"]

logger = logging.getLogger(__name__)

AuthFactory = Callable[[MCPServerConfig], "httpx2.Auth | None"]
"""Gives the request signer (OAuth) for an HTTP server's next connection, or ``None``."""

FingerprintListener = Callable[[str, dict[str, str]], None]
"""Called (in a worker thread) with ``(server, fingerprints)`` when a first listing is trusted."""

_STOP_SECONDS = 15.0  # stdio_client's own shutdown is bounded at ~6.5 s per server


class MCPManager(SharedCatalogs):
    """Connects configured MCP servers and keeps their tools in the registry."""

    def __init__(
        self,
        *,
        backoff: Backoff | None = None,
        health_interval: float = 30.0,
        on_fingerprints_approved: FingerprintListener | None = None,
        auth_for: AuthFactory | None = None,
    ) -> None:
        """``health_interval``: seconds of quiet after which a ready server is re-listed.

        ``auth_for(config)`` gives an HTTP server's request signer (an OAuth provider
        from :func:`openprogram.mcp.oauth.oauth_auth`) or ``None``; it is asked once per
        connection, so a reconnect picks up a changed one.
        """
        if health_interval <= 0:
            raise ValueError(f"health_interval must be positive, got {health_interval!r}")
        self._backoff = backoff or Backoff()
        self._health_interval = health_interval
        self._on_fingerprints_approved = on_fingerprints_approved
        self._auth_for = auth_for
        self._servers: dict[str, ManagedServer] = {}
        self._retiring: set[ServerConnection] = set()
        """Connections being stopped; shutdown waits for them so no child outlives the loop."""
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="openprogram-mcp", daemon=True
        )
        self._thread.start()
        self._closed = False

    # --- configuration (any thread) -------------------------------------------------

    def start(self, configs: Iterable[MCPServerConfig]) -> None:
        """Add every config; enabled servers start connecting in the background."""
        for config in configs:
            self.add(config)

    def add(self, config: MCPServerConfig) -> concurrent.futures.Future[None]:
        with self._lock:
            if config.name in self._servers:
                raise ValueError(f"MCP server {config.name!r} is already managed; use update()")
            self._servers[config.name] = _managed(config)
        return self._submit(self._apply_config(config.name))

    def update(self, config: MCPServerConfig) -> concurrent.futures.Future[None]:
        """Apply a changed config: reconnect only when how to reach the server changed."""
        with self._lock:
            entry = self._servers.get(config.name)
            if entry is None:
                self._servers[config.name] = _managed(config)
                return self._submit(self._apply_config(config.name))
            reconnect = entry.config.connection_key() != config.connection_key()
            entry.config = config
            entry.approved = dict(config.approved_fingerprints) or entry.approved
            if not config.enabled:
                # Tools leave the registry now, not when the process has exited.
                entry.unregister_all()
        if reconnect:
            return self._submit(self._restart(config.name))
        return self._submit(self._apply_config(config.name))

    def remove(self, name: str) -> concurrent.futures.Future[None]:
        """Forget a server: its tools leave the registry now, its process shortly after."""
        with self._lock:
            entry = self._servers.pop(name, None)
            if entry is None:
                raise MCPUnknownServerError(f"no MCP server named {name!r}")
            entry.unregister_all()
            self._changed.notify_all()
        return self._submit(self._stop_connection(entry))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._servers)

    # --- status (any thread) ----------------------------------------------------------

    def status(self, name: str) -> dict[str, Any]:
        """``{state, error, tools, last_change, retries, protocol_version, ...}`` for one server."""
        with self._lock:
            entry = self._servers.get(name)
            if entry is None:
                raise MCPUnknownServerError(f"no MCP server named {name!r}")
            return entry.status()

    def statuses(self) -> dict[str, dict[str, Any]]:
        return {name: self.status(name) for name in self.names()}

    def wait_for(
        self,
        name: str,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        timeout: float,
    ) -> dict[str, Any]:
        """Block until ``predicate(status(name))`` holds; raise TimeoutError with the last status.

        A server not added yet is waited for, so a caller may wait right after a
        background start.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                try:
                    current: dict[str, Any] | None = self.status(name)
                except MCPUnknownServerError:
                    current = None  # not added yet: keep waiting
                if current is not None and predicate(current):
                    return current
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"MCP server {name!r} did not reach the condition: {current}"
                    )
                self._changed.wait(remaining)

    def approve_fingerprints(self, name: str) -> dict[str, str]:
        """Trust the server's current tool definitions; returns them for storing."""
        with self._lock:
            entry = self._servers.get(name)
            if entry is None:
                raise MCPUnknownServerError(f"no MCP server named {name!r}")
            entry.approved = dict(entry.fingerprints)
            entry.config = replace(entry.config, approved_fingerprints=entry.approved)
            self._changed.notify_all()
            return dict(entry.approved)

    # --- calls (any loop) ---------------------------------------------------------------

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressFn | None = None,
        elicitor: CallElicitor | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` (the server's own name) and return the raw MCP result.

        Raises :class:`openprogram.mcp.errors.MCPCallError` subclasses: the
        server is unknown or not connected (immediately), the call timed out,
        or the server answered with a protocol error.
        """
        with self._lock:
            entry = self._servers.get(server)
            connection = entry.connection if entry is not None else None
        if entry is None:
            raise MCPUnknownServerError(f"no MCP server named {server!r}")
        if connection is None:
            raise MCPServerUnavailableError(
                f"MCP server {server!r} is not connected (disabled or reconnecting)"
            )
        work = connection.call(
            tool, args, timeout=timeout, on_progress=on_progress, elicitor=elicitor
        )
        return await self._on_loop(work)

    # --- shutdown ------------------------------------------------------------------------

    def shutdown(self, *, timeout: float = 30.0) -> None:
        """Close every session and child process, unregister every tool, stop the loop."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            entries = list(self._servers.values())
            self._servers.clear()
            for entry in entries:
                entry.unregister_all()
        future = asyncio.run_coroutine_threadsafe(self._stop_all(entries), self._loop)
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            logger.error("MCP servers did not stop within %ss", timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()

    # --- on the manager loop --------------------------------------------------------------

    def _submit(self, work: Any) -> concurrent.futures.Future[None]:
        if self._closed:
            work.close()
            raise RuntimeError("the MCP manager has been shut down")
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    async def _apply_config(self, name: str) -> None:
        with self._lock:
            entry = self._servers.get(name)
            if entry is None:
                return
            if not entry.config.enabled:
                connection, entry.connection = entry.connection, None
            else:
                connection = None
                if entry.connection is None:
                    entry.connection = self._new_connection(entry)
                    entry.connection.start()
                else:
                    entry.connection.config = entry.config
                    entry.register_listed(self)
            self._changed.notify_all()
        if connection is not None:
            await self._retire(connection)

    async def _restart(self, name: str) -> None:
        with self._lock:
            entry = self._servers.get(name)
            old = entry.connection if entry is not None else None
            if entry is not None:
                entry.connection = None
        if old is not None:
            await self._retire(old)
        await self._apply_config(name)

    async def _stop_connection(self, entry: ManagedServer) -> None:
        if entry.connection is not None:
            await self._retire(entry.connection)

    async def _retire(self, connection: ServerConnection) -> None:
        self._retiring.add(connection)
        try:
            await connection.stop()
        finally:
            self._retiring.discard(connection)

    async def _stop_all(self, entries: list[ManagedServer]) -> None:
        connections = {e.connection for e in entries if e.connection is not None}
        connections |= self._retiring
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_STOP_SECONDS):
                await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    def _new_connection(self, entry: ManagedServer) -> ServerConnection:
        config = entry.config
        return entry.new_connection(
            backoff=self._backoff,
            health_interval=self._health_interval,
            on_state=self._connection_state_changed,
            on_tools=self._connection_listed_tools,
            on_catalog=self._connection_listed_catalog,
            auth=self._auth_for(config) if self._auth_for and config.transport == "http" else None,
        )

    def _connection_state_changed(self, connection: ServerConnection) -> None:
        with self._lock:
            entry = self._servers.get(connection.name)
            if entry is not None and entry.connection is connection:
                entry.mark_availability()
            self._changed.notify_all()

    def _connection_listed_tools(
        self, connection: ServerConnection, tools: list[mcp_types.Tool]
    ) -> None:
        trusted: dict[str, str] | None = None
        with self._lock:
            entry = self._servers.get(connection.name)
            if entry is None or entry.connection is not connection:
                return
            entry.listed = list(tools)
            entry.fingerprints = listing_fingerprints(tools)
            if not entry.approved and entry.fingerprints:
                # Trust on first use: the first listing is what later listings are held to.
                entry.approved = dict(entry.fingerprints)
                trusted = dict(entry.approved)
            entry.register_listed(self)
            self._changed.notify_all()
        if trusted is not None and self._on_fingerprints_approved is not None:
            self._loop.run_in_executor(
                None, self._on_fingerprints_approved, connection.name, trusted
            )


def _managed(config: MCPServerConfig) -> ManagedServer:
    """The manager's record of a server it was just given.

    Imported here, not at the top, because it is where the MCP SDK loads (~1 s of CPU):
    ``managed_server`` imports the connection and the SDK with it. A process that never
    configures a server (every management command; a web process with no MCP server)
    never imports it, as tests/integration/site/test_startup_imports.py checks.
    """
    from openprogram.mcp.managed_server import ManagedServer

    return ManagedServer(config)
