"""A stored account whose access token expired while the server was down: refreshed, not re-asked."""

from __future__ import annotations

import time

import pytest

from openprogram.mcp import get_mcp_accounts
from tests.fakes.oauth_launch import OAuthDemo
from tools_app.mcp.models import MCPServer
from tools_app.mcp.services import mcp_servers_start, mcp_servers_stop

from .app_accounts import browser_for, connect, wait_until
from .conftest import WAIT

pytestmark = pytest.mark.django_db(transaction=True)


TOKEN_SECONDS = 5
"""Long enough that connecting (authorize, token, listing) ends before the token expires
even on a loaded machine; short enough to wait out."""


@pytest.mark.parametrize("oauth_provider", [("--token-seconds", str(TOKEN_SECONDS))], indirect=True)
def test_a_restart_after_the_access_token_expired_refreshes_it_without_asking(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    connect(browser_for(alice), "alice-acct")
    consent_pages = len(oauth_provider.events("authorize"))
    mcp_servers_stop()
    time.sleep(TOKEN_SECONDS + 0.2)  # the provider's token lifetime is the condition under test

    mcp_servers_start()

    wait_until(lambda: "notes" in get_mcp_accounts().names())
    status = get_mcp_accounts().wait_for(
        "notes", alice.pk, lambda s: s["state"] in ("ready", "failed"), timeout=WAIT
    )
    assert status["state"] == "ready", status
    grants = [e["grant_type"] for e in oauth_provider.events("token")]
    assert grants == ["authorization_code", "refresh_token"]
    assert len(oauth_provider.events("authorize")) == consent_pages  # nobody was asked again


def test_a_restart_after_the_provider_dropped_every_token_asks_to_connect_again(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    connect(browser_for(alice), "alice-acct")
    consent_pages = len(oauth_provider.events("authorize"))
    mcp_servers_stop()
    oauth_provider.revoke_all()  # the refresh token no longer works either

    mcp_servers_start()

    wait_until(lambda: "notes" in get_mcp_accounts().names())
    status = get_mcp_accounts().wait_for(
        "notes", alice.pk, lambda s: s["state"] in ("ready", "failed"), timeout=WAIT
    )
    assert status["state"] == "failed"
    assert "connect your account again" in status["error"]
    assert [e["grant_type"] for e in oauth_provider.events("token")][-1] == "refresh_token"
    assert len(oauth_provider.events("authorize")) == consent_pages
