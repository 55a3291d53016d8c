"""Keeping this process's per-user sessions in step with the accounts stored in the database.

With several web processes, each runs its own sessions (a turn's tools come
from the process running it), but a user connects or disconnects through one
of them: the callback that finished the flow, or the Disconnect, reached only
that process. The others learn it from the database: every
:data:`SYNC_SECONDS` each process compares the stored accounts with its
sessions and

- connects the sessions it lacks, with the stored tokens;
- reconnects a failed session whose tokens were replaced since it last looked
  (the user connected again elsewhere);
- closes the sessions whose account is gone (the user disconnected elsewhere),
  including one this process connected itself moments before.

Only a session that this process's own Connect is still opening (no account
is stored before the callback) is left alone (:func:`mcp_account_connecting`).

This module is imported at every start-up, so it imports none of the OAuth flow
(``oauth_services``, and with it the MCP SDK): it is needed, and imported, only
to resume a stored account (:func:`_resume`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.db import DatabaseError, close_old_connections

from openprogram.mcp import MCPServerConfig, get_mcp_accounts
from tools_app.mcp.account_models import MCPAccount
from tools_app.mcp.models import MCPServer

__all__ = [
    "SYNC_SECONDS",
    "mcp_account_connect_in_progress",
    "mcp_account_connecting",
    "mcp_accounts_follow_start",
    "mcp_accounts_follow_stop",
    "mcp_accounts_forget_server",
    "mcp_accounts_reconcile",
    "mcp_accounts_sync_server",
]

logger = logging.getLogger(__name__)

SYNC_SECONDS = 5.0
"""How soon another process's Connect or Disconnect reaches this one's sessions."""

_lock = threading.Lock()
_seen: dict[tuple[str, str], datetime | None] = {}
"""(server, user) → the stored account's ``connected`` when this process last looked."""
_stop = threading.Event()
_thread: threading.Thread | None = None
_starting: set[tuple[str, str]] = set()
"""(server, user as str) whose Connect is opening a session in this process, before any account exists."""
_starting_lock = threading.Lock()


@contextmanager
def mcp_account_connecting(*, name: str, user: str) -> Iterator[None]:
    """While this process's Connect opens ``user``'s session to ``name``: the sync leaves it."""
    key = (name, user)
    with _starting_lock:
        _starting.add(key)
    try:
        yield
    finally:
        with _starting_lock:
            _starting.discard(key)


def mcp_account_connect_in_progress(*, name: str, user: str) -> bool:
    """Whether this process's Connect for ``(name, user)`` is still opening its session.

    Such a session has no stored account yet; the accounts sync must leave it alone.
    """
    with _starting_lock:
        return (name, user) in _starting


def mcp_accounts_sync_server(*, server: MCPServer, config: MCPServerConfig) -> None:
    """Run ``server`` as a per-user server: configure it and resume stored accounts."""
    accounts = get_mcp_accounts()
    accounts.configure(config)
    if not server.enabled:
        return
    try:
        rows = list(
            MCPAccount.objects.filter(server=server)
            .exclude(sealed_tokens="")
            .values_list("user_id", flat=True)
        )
    except DatabaseError as exc:
        logger.warning("MCP server %r: accounts not resumed (%s)", server.name, exc)
        return
    for user_id in rows:
        if accounts.status(server.name, user_id)["state"] == "stopped":
            _resume(server=server, user_id=user_id)


def mcp_accounts_forget_server(*, name: str) -> None:
    """Close every user's session to ``name`` and withdraw its tools (tokens stay stored)."""
    accounts = get_mcp_accounts()
    if name in accounts.names():
        accounts.remove(name)


def _resume(*, server: MCPServer, user_id: int) -> None:
    """(Re)connect ``user_id``'s session to ``server`` with the stored tokens.

    Imported here, not at the top: ``oauth_services`` imports the OAuth client and
    with it the MCP SDK (~1 s of CPU), which a process with no stored account of a
    per-user server never needs (tests/integration/site/test_startup_imports.py).
    """
    from tools_app.mcp.oauth_services import mcp_account_resume

    mcp_account_resume(server=server, user_id=user_id)


def mcp_accounts_reconcile() -> None:
    """One comparison of stored accounts with this process's sessions (see the module doc)."""
    accounts = get_mcp_accounts()
    running = set(accounts.names())
    # The sessions first, the rows second: a session opened after this look (a callback
    # finishing here) is not mistaken for one whose account is gone.
    sessions = {(name, user) for name in running for user in accounts.users(name)}
    rows = (
        MCPAccount.objects.filter(
            server__name__in=running, server__enabled=True, server__per_user_auth=True
        )
        .exclude(sealed_tokens="")
        .select_related("server")
    )
    stored = {(row.server.name, str(row.user_id)): row for row in rows}
    with _lock:
        for key, row in stored.items():
            state = accounts.status(*key)["state"]
            replaced = key in _seen and _seen[key] != row.connected
            if state == "stopped" or (state == "failed" and replaced):
                _resume(server=row.server, user_id=row.user_id)
            _seen[key] = row.connected
        for key in [key for key in _seen if key not in stored]:
            del _seen[key]
        for name, user in sessions - stored.keys():
            if not mcp_account_connect_in_progress(name=name, user=user):
                accounts.disconnect(name, user)


def _follow() -> None:
    while not _stop.wait(SYNC_SECONDS):
        try:
            mcp_accounts_reconcile()
        except DatabaseError as exc:
            logger.warning("MCP accounts not synced with the database: %s", exc)
        except Exception:
            logger.exception("MCP accounts sync failed")
        finally:
            close_old_connections()


def mcp_accounts_follow_start() -> None:
    """Start following the stored accounts in a daemon thread (once per process)."""
    global _thread
    with _lock:
        if _thread is not None and _thread.is_alive():
            return
        _stop.clear()
        _thread = threading.Thread(target=_follow, name="mcp-accounts-sync", daemon=True)
        _thread.start()


def mcp_accounts_follow_stop() -> None:
    """Stop following (tests; the thread is a daemon at exit) and forget what was seen."""
    global _thread
    _stop.set()
    thread, _thread = _thread, None
    if thread is not None:
        thread.join(SYNC_SECONDS)
    with _lock:
        _seen.clear()
