"""The process-wide MCP manager (and per-user accounts) a host application feeds, closed at exit."""

from __future__ import annotations

import atexit
import threading

from openprogram.mcp.accounts import MCPAccounts
from openprogram.mcp.manager import FingerprintListener, MCPManager

__all__ = ["get_mcp_accounts", "get_mcp_manager", "shutdown_mcp_accounts", "shutdown_mcp_manager"]

_lock = threading.Lock()
_manager: MCPManager | None = None
_accounts: MCPAccounts | None = None


def get_mcp_manager(*, on_fingerprints_approved: FingerprintListener | None = None) -> MCPManager:
    """The one manager of this process, created on first use.

    ``on_fingerprints_approved`` only takes effect on the call that creates it.
    Its servers' child processes are closed when the interpreter exits.
    """
    global _manager
    with _lock:
        if _manager is None:
            _manager = MCPManager(on_fingerprints_approved=on_fingerprints_approved)
            atexit.register(shutdown_mcp_manager)
        return _manager


def shutdown_mcp_manager() -> None:
    """Close every server of the process-wide manager (safe to call twice)."""
    global _manager
    with _lock:
        manager, _manager = _manager, None
    if manager is not None:
        manager.shutdown()


def get_mcp_accounts(*, on_fingerprints_approved: FingerprintListener | None = None) -> MCPAccounts:
    """The process's per-user connections (servers where each user connects their own account).

    ``on_fingerprints_approved``, when given, is where first-use tool pins go from now on.
    """
    global _accounts
    with _lock:
        if _accounts is None:
            _accounts = MCPAccounts()
            atexit.register(shutdown_mcp_accounts)
        if on_fingerprints_approved is not None:
            # SLF001: the package's own accounts module, set up by its process owner.
            _accounts._on_fingerprints_approved = on_fingerprints_approved  # noqa: SLF001
        return _accounts


def shutdown_mcp_accounts() -> None:
    """Close every user's connection (safe to call twice)."""
    global _accounts
    with _lock:
        accounts, _accounts = _accounts, None
    if accounts is not None:
        accounts.shutdown()
