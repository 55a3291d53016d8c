"""Writes for MCP servers, and feeding the stored configuration to the running manager.

The process-wide :class:`openprogram.mcp.MCPManager` is fed only once
:func:`mcp_servers_start` has run (the server's start-up does it): before that,
saving a row only stores it, so management commands and tests never spawn
servers by accident. After that, every save or delete of a row (signals below)
reaches the manager on commit, without waiting for any process to start or stop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from django.db import DatabaseError, OperationalError, close_old_connections, transaction
from django.db.models.signals import post_delete, post_save

from core.api_errors import UnprocessableError
from openprogram.mcp import (
    MCPConfigError,
    MCPManager,
    MCPServerConfig,
    get_mcp_accounts,
    get_mcp_manager,
    parse_mcp_servers_json,
    shutdown_mcp_accounts,
    shutdown_mcp_manager,
)
from tools_app.mcp.account_sync import (
    mcp_accounts_follow_start,
    mcp_accounts_follow_stop,
    mcp_accounts_forget_server,
    mcp_accounts_sync_server,
)
from tools_app.mcp.models import MCPServer

__all__ = [
    "mcp_manager_is_live",
    "mcp_server_approve_fingerprints",
    "mcp_server_config",
    "mcp_server_forget",
    "mcp_server_set_enabled",
    "mcp_server_sync",
    "mcp_servers_import",
    "mcp_servers_start",
    "mcp_servers_stop",
]

logger = logging.getLogger(__name__)

_live = threading.Event()
"""Set by mcp_servers_start: from then on rows are mirrored into the manager."""


def mcp_manager_is_live() -> bool:
    return _live.is_set()


def _manager() -> MCPManager:
    return get_mcp_manager(on_fingerprints_approved=_record_first_fingerprints)


def mcp_server_config(*, server: MCPServer) -> MCPServerConfig:
    """The framework config for a row; UnprocessableError says which field is wrong."""
    try:
        return MCPServerConfig(
            name=server.name,
            transport=server.transport,  # type: ignore[arg-type]
            command=server.command,
            args=server.args or (),
            env=server.env or {},
            url=server.url,
            headers=server.headers or {},
            enabled=server.enabled,
            always_load=server.always_load,
            expose=server.expose,
            confined=server.confined,
            network=server.network,
            allow_tools=server.allow_tools or (),
            deny_tools=server.deny_tools or (),
            timeout=server.timeout_seconds,
            destructive_without_approval=server.destructive_without_approval,
            approved_fingerprints=server.approved_fingerprints or {},
        )
    except MCPConfigError as exc:
        raise UnprocessableError(str(exc)) from exc


def mcp_server_sync(*, server: MCPServer) -> None:
    """Make the running manager match this row (connect, reconfigure or disconnect).

    A no-op until :func:`mcp_servers_start` has run. A row that cannot become a
    config is logged and left disconnected rather than raising into a save.
    """
    if not _live.is_set():
        return
    try:
        config = mcp_server_config(server=server)
    except UnprocessableError as exc:
        logger.error("MCP server %r not started: %s", server.name, exc.message)
        return
    _route(server, config)


def _route(server: MCPServer, config: MCPServerConfig) -> None:
    """A per-user server runs one session per connected user; any other, one shared session."""
    manager = _manager()
    if server.per_user_auth and server.transport == MCPServer.Transport.HTTP:
        if server.name in manager.names():
            manager.remove(server.name)
        mcp_accounts_sync_server(server=server, config=config)
    else:
        mcp_accounts_forget_server(name=server.name)
        manager.update(config)


def mcp_server_forget(*, name: str) -> None:
    """Disconnect and unregister a deleted server's tools (no-op if it was never started)."""
    if not _live.is_set():
        return
    manager = _manager()
    if name in manager.names():
        manager.remove(name)
    mcp_accounts_forget_server(name=name)


def mcp_server_set_enabled(*, server: MCPServer, enabled: bool) -> MCPServer:
    server.enabled = enabled
    server.save(update_fields=["enabled", "updated"])
    return server


def mcp_server_approve_fingerprints(*, server: MCPServer) -> dict[str, str]:
    """Trust the server's current tool definitions: changed-tool flags clear.

    For a per-user server: the definitions its users' connections list now.
    """
    running = get_mcp_accounts() if server.per_user_auth else _manager()
    if not _live.is_set() or server.name not in running.names():
        raise UnprocessableError(f"MCP server {server.name!r} is not running; nothing to approve")
    approved = running.approve_fingerprints(server.name)
    if not approved:
        raise UnprocessableError(f"MCP server {server.name!r} has listed no tools yet")
    MCPServer.objects.filter(pk=server.pk).update(approved_fingerprints=approved)
    server.approved_fingerprints = approved
    return approved


@transaction.atomic
def mcp_servers_import(*, data: str | bytes | Mapping[str, Any]) -> list[MCPServer]:
    """Create or update rows from ``{"mcpServers": {...}}``; all or nothing.

    An existing server of the same name is overwritten field by field (its
    approved fingerprints are kept). Raises UnprocessableError naming the bad entry.
    """
    try:
        configs = parse_mcp_servers_json(data)
    except MCPConfigError as exc:
        raise UnprocessableError(str(exc)) from exc
    if not configs:
        raise UnprocessableError('"mcpServers" lists no servers')
    saved: list[MCPServer] = []
    for config in configs:
        server, _ = MCPServer.objects.update_or_create(
            name=config.name,
            defaults={
                "transport": config.transport,
                "command": config.command,
                "args": list(config.args),
                "env": dict(config.env),
                "url": config.url,
                "headers": dict(config.headers),
                "enabled": config.enabled,
                "always_load": config.always_load,
                "expose": config.expose,
                "confined": config.confined,
                "network": config.network,
                "allow_tools": list(config.allow_tools),
                "deny_tools": list(config.deny_tools),
                "timeout_seconds": config.timeout,
                "destructive_without_approval": config.destructive_without_approval,
            },
        )
        saved.append(server)
    return saved


def mcp_servers_start() -> None:
    """Connect every enabled stored server, in the background; returns at once.

    Start-up must not wait on the database or on any server: the rows are read
    in a daemon thread and each server connects on the manager's own loop.
    """
    if _live.is_set():
        return
    _manager()  # created here (cheap: a thread and an event loop) so it has our listener
    get_mcp_accounts(on_fingerprints_approved=_record_first_fingerprints)
    _live.set()
    threading.Thread(target=_start_stored_servers, name="mcp-start", daemon=True).start()
    # Accounts connected or disconnected through another web process reach this one.
    mcp_accounts_follow_start()


def mcp_servers_stop() -> None:
    """Disconnect every server and stop mirroring rows (tests; exit does it via atexit)."""
    _live.clear()
    mcp_accounts_follow_stop()
    shutdown_mcp_manager()
    shutdown_mcp_accounts()


def _start_stored_servers() -> None:
    try:
        rows = list(MCPServer.objects.all())
    except DatabaseError as exc:
        logger.warning("MCP servers not started: cannot read them (%s)", exc)
        return
    finally:
        close_old_connections()
    for row in rows:
        try:
            _route(row, mcp_server_config(server=row))
        except UnprocessableError as exc:
            logger.error("MCP server %r not started: %s", row.name, exc.message)
        except DatabaseError as exc:
            logger.warning("MCP server %r not started: %s", row.name, exc)
        finally:
            close_old_connections()


_FINGERPRINT_WRITE_ATTEMPTS = 5


def _record_first_fingerprints(name: str, fingerprints: dict[str, str]) -> None:
    """Store the definitions trusted on first use, unless an operator approved others since.

    Runs on the MCP manager's thread, beside the web process's own writes: a briefly
    locked SQLite table is retried with a short backoff (under a second in all) rather
    than losing the first-use record.
    """
    for attempt in range(_FINGERPRINT_WRITE_ATTEMPTS):
        try:
            MCPServer.objects.filter(name=name, approved_fingerprints={}).update(
                approved_fingerprints=fingerprints
            )
            return
        except OperationalError as exc:
            if attempt + 1 == _FINGERPRINT_WRITE_ATTEMPTS or "locked" not in str(exc):
                logger.warning("MCP server %r: could not store its fingerprints (%s)", name, exc)
                return
            time.sleep(0.05 * 2**attempt)
        except DatabaseError as exc:
            logger.warning("MCP server %r: could not store its fingerprints (%s)", name, exc)
            return
        finally:
            close_old_connections()


def _after_save(sender: type[MCPServer], instance: MCPServer, **kwargs: Any) -> None:
    if _live.is_set():
        transaction.on_commit(lambda: mcp_server_sync(server=instance))


def _after_delete(sender: type[MCPServer], instance: MCPServer, **kwargs: Any) -> None:
    if _live.is_set():
        name = instance.name
        transaction.on_commit(lambda: mcp_server_forget(name=name))


post_save.connect(_after_save, sender=MCPServer, dispatch_uid="mcp_server_saved")
post_delete.connect(_after_delete, sender=MCPServer, dispatch_uid="mcp_server_deleted")
