"""Several web processes: an account connected or disconnected through one reaches the others.

This process stands in for "the other one": the account is connected or
deleted in the database as the process that got the callback or the
Disconnect would, and this process's sessions follow within SYNC_SECONDS.
Real OAuth-protected MCP server (tests/fakes/oauth_mcp_server.py).
"""

from __future__ import annotations

import pytest

from openprogram.mcp import get_mcp_accounts
from tools_app.mcp.account_models import MCPAccount
from tools_app.mcp.account_sync import SYNC_SECONDS, mcp_accounts_reconcile
from tools_app.mcp.models import MCPServer

from .app_accounts import TOOL, browser_for, connect, l4_reason
from .conftest import WAIT

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_account_connected_through_another_process_gets_a_session_here(
    notes: MCPServer, alice
) -> None:
    connect(browser_for(alice), "alice-acct")
    # As if the callback had reached another process: the tokens are stored, no session here.
    get_mcp_accounts().disconnect("notes", alice.pk).result(WAIT)
    assert "connect your account" in (l4_reason(alice, TOOL) or "")

    status = get_mcp_accounts().wait_for(
        "notes", alice.pk, lambda s: s["state"] == "ready", timeout=SYNC_SECONDS + WAIT
    )

    assert status["state"] == "ready"
    assert l4_reason(alice, TOOL) is None


def test_an_account_disconnected_through_another_process_loses_its_session_here(
    notes: MCPServer, alice, bob
) -> None:
    connect(browser_for(alice), "alice-acct")
    connect(browser_for(bob), "bob-acct")
    mcp_accounts_reconcile()
    # As if alice had pressed Disconnect on another process: her row is gone.
    MCPAccount.objects.filter(user=alice).delete()

    mcp_accounts_reconcile()

    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "stopped"
    assert "connect your account" in (l4_reason(alice, TOOL) or "")
    assert get_mcp_accounts().status("notes", bob.pk)["state"] == "ready"


def test_a_session_connected_here_moments_before_a_disconnect_elsewhere_is_closed(
    notes: MCPServer, alice
) -> None:
    # The callback finished here and, before this process's next look at the database,
    # alice pressed Disconnect on another process: her session here must not outlive it.
    connect(browser_for(alice), "alice-acct")
    MCPAccount.objects.filter(user=alice).delete()

    mcp_accounts_reconcile()

    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "stopped"
    assert "connect your account" in (l4_reason(alice, TOOL) or "")


def test_a_ready_session_is_not_restarted_when_nothing_changed(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")
    mcp_accounts_reconcile()
    before = get_mcp_accounts().status("notes", alice.pk)

    mcp_accounts_reconcile()

    # Nothing changed in the database: the ready session is not restarted.
    assert get_mcp_accounts().status("notes", alice.pk) == before
