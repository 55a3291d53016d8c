"""Servers where each user connects their own account: one connection per (server, user).

A remote MCP server behind OAuth acts for whoever authorized it, so one shared
session cannot serve several people. :class:`MCPAccounts` keeps, for every
server configured here, one :class:`ServerConnection` per connected user, each
signed with that user's own OAuth signer (:func:`openprogram.mcp.oauth.oauth_auth`
over the user's token store), on a background loop of its own like
:class:`MCPManager`. Like the manager, it needs nothing of the MCP SDK until a
server is configured (:func:`_account_server`).

The server's tools register once, from the latest listing any user's
connection made. Who may use them is decided in one place, layer 4: every tool
carries a ``can_use`` gate that passes only for a ``user_id`` whose own
connection is ready, and otherwise says what to do ("connect your account").
A call goes through the calling turn's user's connection (``get_turn().user_id``),
never anyone else's. Each user's prompts and resources are offered to that
user only, and tool definitions are pinned like a shared server's
(:mod:`openprogram.mcp.accounts_listings`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openprogram.agent.context import get_turn
from openprogram.mcp.accounts_listings import AccountListings, FingerprintListener
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.errors import (
    MCPProtocolError,
    MCPServerUnavailableError,
    MCPUnknownServerError,
)
from openprogram.mcp.registration import registry_sync, registry_withdraw
from openprogram.mcp.supervision import Backoff
from openprogram.programs import ToolUnavailable

if TYPE_CHECKING:
    import httpx2
    import mcp_types

    from openprogram.mcp.account_server import AccountServer
    from openprogram.mcp.connection import ServerConnection

__all__ = ["MCPAccounts"]

_STOP_SECONDS = 15.0


class MCPAccounts(AccountListings):
    """Per-user connections to the servers configured with :meth:`configure`."""

    def __init__(
        self,
        *,
        backoff: Backoff | None = None,
        health_interval: float = 30.0,
        on_fingerprints_approved: FingerprintListener | None = None,
    ) -> None:
        self._backoff = backoff or Backoff()
        self._health_interval = health_interval
        self._on_fingerprints_approved = on_fingerprints_approved
        self._servers: dict[str, AccountServer] = {}
        self._owners: dict[ServerConnection, str] = {}
        self._signers: dict[ServerConnection, httpx2.Auth] = {}
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="openprogram-mcp-accounts", daemon=True
        )
        self._thread.start()
        self._closed = False

    # --- configuration (any thread) -----------------------------------------------------

    def configure(self, config: MCPServerConfig) -> concurrent.futures.Future[None]:
        """Add or change a server; users' connections restart when how to reach it changed."""
        if config.transport != "http":
            raise ValueError(f"MCP server {config.name!r}: per-user accounts need an http server")
        stale: list[ServerConnection] = []
        with self._lock:
            server = self._servers.get(config.name)
            if server is None:
                self._servers[config.name] = _account_server(config)
            else:
                if server.config.connection_key() != config.connection_key() or not config.enabled:
                    stale = list(server.connections.values())
                    server.connections.clear()
                    server.catalogs.clear()
                    server.fingerprints.clear()
                server.config = config
                server.approved = dict(config.approved_fingerprints) or server.approved
                self._register_listed(server)
            self._changed.notify_all()
        return self._submit(self._stop(stale))

    def remove(self, name: str) -> concurrent.futures.Future[None]:
        """Forget a server: its tools leave the registry now, its connections shortly after."""
        with self._lock:
            server = self._servers.pop(name, None)
            if server is None:
                raise MCPUnknownServerError(f"no per-user MCP server named {name!r}")
            registry_withdraw(server.registered)
            stale = list(server.connections.values())
            self._changed.notify_all()
        return self._submit(self._stop(stale))

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._servers)

    # --- one user's account (any thread) --------------------------------------------------

    def connect(
        self, name: str, user: str | int, auth: httpx2.Auth
    ) -> concurrent.futures.Future[None]:
        """(Re)connect ``user``'s own session to ``name``, signed by ``auth``."""
        key = str(user)
        with self._lock:
            server = self._server(name)
            if not server.config.enabled:
                raise MCPServerUnavailableError(f"MCP server {name!r} is disabled")
            old = server.connections.pop(key, None)
            connection = server.new_connection(
                backoff=self._backoff,
                health_interval=self._health_interval,
                on_state=self._state_changed,
                on_tools=self._listed_tools,
                on_catalog=self._listed_catalog,
                auth=auth,
            )
            server.connections[key] = connection
            self._owners[connection] = key
            self._signers[connection] = auth
        return self._submit(self._start(connection, [old] if old else []))

    def disconnect(self, name: str, user: str | int) -> concurrent.futures.Future[None]:
        """Close ``user``'s session: their calls and tools stop at once."""
        with self._lock:
            server = self._servers.get(name)
            old = server.connections.pop(str(user), None) if server is not None else None
            if server is not None:
                server.catalogs.pop(str(user), None)
                server.fingerprints.pop(str(user), None)
            self._changed.notify_all()
        return self._submit(self._stop([old] if old else []))

    def status(self, name: str, user: str | int) -> dict[str, Any]:
        """``{state, error, last_change}`` of ``user``'s connection (``stopped`` when none)."""
        with self._lock:
            connection = self._server(name).connections.get(str(user))
            if connection is None:
                return {"state": "stopped", "error": None, "last_change": None}
            return {
                "state": connection.state,
                "error": connection.error,
                "last_change": connection.last_change,
            }

    def users(self, name: str) -> list[str]:
        """The users (as strings) with a session to ``name``, in any state."""
        with self._lock:
            return sorted(self._server(name).connections)

    def summary(self, name: str) -> dict[str, Any]:
        """``{users, ready, tools, changed_tools, fingerprints}`` of a server, for its admin.

        Sessions open and ready, registered tool names, tools changed since approval
        (in any user's listing), the latest listing's fingerprints.
        """
        with self._lock:
            server = self._server(name)
            states = [c.state for c in server.connections.values()]
            return {
                "users": len(states),
                "ready": states.count("ready"),
                "tools": sorted(server.registered),
                "changed_tools": self.changed_tools(name),
                "fingerprints": dict(server.latest),
            }

    def wait_for(
        self,
        name: str,
        user: str | int,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        timeout: float,
    ) -> dict[str, Any]:
        """Block until ``predicate(status(name, user))`` holds; TimeoutError with the last one."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                current = self.status(name, user)
                if predicate(current):
                    return current
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{name!r} for user {user!r} did not get there: {current}")
                self._changed.wait(remaining)

    def unavailable_reason(self, name: str, user: str | int | None) -> str | None:
        """Why ``user`` cannot use ``name``'s tools now, in words they can act on."""
        with self._lock:
            server = self._servers.get(name)
            if server is None:
                return f"MCP server {name!r} is not configured"
            connection = server.connections.get(str(user)) if user is not None else None
            if connection is None:
                return f"connect your account for {name!r} on the Programs page"
            if connection.state == "ready":
                return None
            if connection.state == "failed":
                return (
                    f"your connection to {name!r} failed ({connection.error}); "
                    "connect your account again on the Programs page"
                )
            return f"your connection to {name!r} is {connection.state}"

    # --- calls (any loop) -----------------------------------------------------------------

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: Any = None,
        **extra: Any,
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` through the current turn's user's own connection."""
        turn = get_turn()
        user = turn.user_id if turn is not None else None
        reason = self.unavailable_reason(server, user)
        with self._lock:
            entry = self._servers.get(server)
            connection = entry.connections.get(str(user)) if entry and user is not None else None
        if reason is not None or connection is None:
            raise MCPServerUnavailableError(reason or f"MCP server {server!r} is not connected")
        work = connection.call(tool, args, timeout=timeout, on_progress=on_progress, **extra)
        try:
            return await self._on_loop(work)
        except MCPProtocolError as exc:
            # A step-up the user's signer could not get consent for: say that, not "error 403".
            signer = self._signers.get(connection)
            refusal = getattr(signer, "refusal", None)
            if not refusal:
                raise
            signer.refusal = None  # type: ignore[union-attr]
            raise MCPProtocolError(
                f"MCP server {server!r} needs more access for {tool!r}: {refusal}"
            ) from exc

    def shutdown(self, *, timeout: float = 30.0) -> None:
        """Close every user's connection and stop the loop (safe to call twice)."""
        if self._closed:
            return
        with self._lock:
            connections = [c for s in self._servers.values() for c in s.connections.values()]
            for server in self._servers.values():
                registry_withdraw(server.registered)
            self._servers.clear()
        future = asyncio.run_coroutine_threadsafe(self._stop(connections), self._loop)
        with contextlib.suppress(Exception):
            future.result(timeout)
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()

    # --- on the loop ------------------------------------------------------------------------

    def _server(self, name: str) -> AccountServer:
        server = self._servers.get(name)
        if server is None:
            raise MCPUnknownServerError(f"no per-user MCP server named {name!r}")
        return server

    def _submit(self, work: Any) -> concurrent.futures.Future[None]:
        if self._closed:
            work.close()
            raise RuntimeError("the MCP accounts manager has been shut down")
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    async def _start(self, connection: ServerConnection, stale: list[ServerConnection]) -> None:
        await self._stop(stale)
        connection.start()

    async def _stop(self, connections: list[ServerConnection]) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_STOP_SECONDS):
                await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        with self._lock:
            for connection in connections:
                self._owners.pop(connection, None)
                self._signers.pop(connection, None)
            self._changed.notify_all()

    def _current(self, connection: ServerConnection) -> AccountServer | None:
        """The server whose live connection this is (None for a replaced one)."""
        server = self._servers.get(connection.name)
        key = self._owners.get(connection)
        if server is None or key is None or server.connections.get(key) is not connection:
            return None
        return server

    def _state_changed(self, connection: ServerConnection) -> None:
        with self._lock:
            self._changed.notify_all()

    def _listed_tools(self, connection: ServerConnection, tools: list[mcp_types.Tool]) -> None:
        with self._lock:
            server = self._current(connection)
            if server is None:
                return
            server.listed = list(tools)
            self._pin(server, self._owners[connection], tools)
            self._register_listed(server)
            self._changed.notify_all()

    def _register_listed(self, server: AccountServer) -> None:
        registry_sync(server.registered, server.listed_tools(caller=self, gate=self._gate))

    def _gate(self, name: str) -> Callable[..., bool]:
        def can_use(user_id: str | int | None = None, **_: Any) -> bool:
            reason = self.unavailable_reason(name, user_id)
            if reason is not None:
                raise ToolUnavailable(reason)
            return True

        return can_use


def _account_server(config: MCPServerConfig) -> AccountServer:
    """The record of a per-user server just configured.

    Imported here, not at the top, because it is where the MCP SDK loads (~1 s of CPU):
    ``account_server`` imports the connection and the SDK with it. A process with no
    per-user server never imports it (tests/integration/site/test_startup_imports.py).
    """
    from openprogram.mcp.account_server import AccountServer

    return AccountServer(config, approved=dict(config.approved_fingerprints))
