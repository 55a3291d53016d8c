"""Per-user accounts in the app: Connect → consent → callback → tools offered → Disconnect.

A real OAuth-protected MCP server with its own authorization server
(tests/fakes/oauth_mcp_server.py); the test plays the browser at the consent page.
"""

from __future__ import annotations

import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.urls import reverse
from django.utils import timezone

from openprogram.mcp import get_mcp_accounts
from openprogram.mcp.oauth_revocation import REVOKE_SECONDS
from tests.fakes.oauth_launch import OAuthDemo
from tools_app.mcp.account_models import MCPAccount, MCPOAuthFlow
from tools_app.mcp.models import MCPServer
from tools_app.mcp.services import mcp_servers_start, mcp_servers_stop
from tools_app.mcp.token_crypto import unseal

from .app_accounts import TOOL, browser_for, connect, consent, l4_reason, start_connect, wait_until
from .conftest import WAIT

pytestmark = pytest.mark.django_db(transaction=True)


def test_alice_connects_her_account_and_only_she_is_offered_the_tools(
    notes: MCPServer, alice, bob
) -> None:
    browser = browser_for(alice)

    connect(browser, "alice-acct")

    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"
    assert l4_reason(alice, TOOL) is None
    assert "connect your account" in (l4_reason(bob, TOOL) or "")
    page = browser.get(reverse("tools:programs"))
    assert b"Your account for notes is connected." in page.content
    assert b"Disconnect" in page.content


def test_tokens_are_stored_sealed_and_never_shown(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")

    account = MCPAccount.objects.get(user=alice, server=notes)
    tokens = unseal(account.sealed_tokens)
    assert tokens["access_token"] not in account.sealed_tokens
    assert tokens["refresh_token"] not in account.sealed_tokens
    page = browser.get(reverse("tools:programs"))
    assert tokens["access_token"].encode() not in page.content


def test_bob_cannot_finish_alices_authorization(notes: MCPServer, alice, bob) -> None:
    alice_browser = browser_for(alice)
    callback = consent(start_connect(alice_browser), "alice-acct")

    stolen = browser_for(bob).get(callback)

    assert stolen.status_code == 403
    assert b"another user" in stolen.content
    assert not MCPAccount.objects.filter(user=bob).exists()
    # Alice's own flow is untouched by the attempt.
    assert alice_browser.get(callback).status_code == 302
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"


def test_a_callback_with_an_unknown_state_is_refused(notes: MCPServer, alice) -> None:
    response = browser_for(alice).get(
        reverse("tools:mcp-oauth-callback"), {"state": "made-up", "code": "x"}
    )

    assert response.status_code == 400
    assert b"unknown or has expired" in response.content


def test_a_refused_consent_stores_nothing_and_says_so(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    callback = consent(start_connect(browser), "alice-acct", decision="deny")

    response = browser.get(callback, follow=True)

    assert b"access_denied" in response.content
    assert not MCPAccount.objects.filter(user=alice).exclude(sealed_tokens="").exists()
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "stopped"


def test_disconnect_forgets_the_tokens_and_withholds_the_tools(
    notes: MCPServer, alice, bob
) -> None:
    alice_browser = browser_for(alice)
    bob_browser = browser_for(bob)
    connect(alice_browser, "alice-acct")
    connect(bob_browser, "bob-acct")

    response = alice_browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]))

    assert response.status_code == 302
    assert not MCPAccount.objects.filter(user=alice).exists()
    assert "connect your account" in (l4_reason(alice, TOOL) or "")
    # Bob's account is his own: alice disconnecting does not touch it.
    assert MCPAccount.objects.filter(user=bob).exists()
    assert l4_reason(bob, TOOL) is None


def test_stored_accounts_reconnect_at_start_without_asking(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    connect(browser_for(alice), "alice-acct")
    mcp_servers_stop()

    mcp_servers_start()

    wait_until(lambda: "notes" in get_mcp_accounts().names())
    status = get_mcp_accounts().wait_for(
        "notes", alice.pk, lambda s: s["state"] == "ready", timeout=WAIT
    )
    assert status["state"] == "ready"
    # One consent in all: the restart used the stored tokens.
    assert [e["grant_type"] for e in oauth_provider.events("token")] == ["authorization_code"]


def test_connect_is_refused_for_a_server_without_per_user_accounts(notes: MCPServer, alice) -> None:
    MCPServer.objects.create(name="shared", command="true")

    response = browser_for(alice).post(reverse("tools:mcp-account-connect", args=["shared"]))

    assert response.status_code == 404


def test_the_admin_status_counts_user_sessions_instead_of_one_state(
    notes: MCPServer, alice
) -> None:
    from tools_app.mcp.selectors import mcp_server_status

    connect(browser_for(alice), "alice-acct")

    status = mcp_server_status(server=notes)

    assert status["state"] == "per-user"
    assert status["user_sessions"] == {"open": 1, "ready": 1}
    assert TOOL in status["tools"]


def test_a_callback_that_reaches_another_process_finishes_the_flow(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    browser = browser_for(alice)
    callback = consent(start_connect(browser), "alice-acct")
    # Another process: nothing of the first one's memory (its accounts loop, its flows).
    mcp_servers_stop()
    mcp_servers_start()
    wait_until(lambda: "notes" in get_mcp_accounts().names())

    response = browser.get(callback, follow=True)

    assert b"Your account for notes is connected." in response.content
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"
    assert l4_reason(alice, TOOL) is None
    assert [e["grant_type"] for e in oauth_provider.events("token")] == ["authorization_code"]


def test_a_flow_is_stored_sealed_and_emptied_once_used(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    url = start_connect(browser)
    state = parse_qs(urlsplit(url).query)["state"][0]

    flow = MCPOAuthFlow.objects.get(user=alice, server=notes)
    pending = unseal(flow.sealed_pending)
    assert pending["state"] == state and len(pending["code_verifier"]) >= 43
    assert state not in flow.state_digest and pending["code_verifier"] not in flow.sealed_pending
    # Connect's own attempt is over: the flow waits in the database, not in a connection.
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "stopped"

    browser.get(consent(url, "alice-acct"))

    flow.refresh_from_db()
    assert flow.used is not None and flow.sealed_pending == ""


def test_a_replayed_callback_is_refused(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    callback = consent(start_connect(browser), "alice-acct")
    assert browser.get(callback).status_code == 302

    replay = browser.get(callback)

    assert replay.status_code == 400
    assert b"already used" in replay.content
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"


def test_an_expired_flow_is_refused_with_a_clear_error_and_deleted(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    callback = consent(start_connect(browser), "alice-acct")
    MCPOAuthFlow.objects.filter(user=alice).update(expires=timezone.now() - timedelta(seconds=1))

    response = browser.get(callback)

    assert response.status_code == 400
    assert b"expired" in response.content
    assert not MCPOAuthFlow.objects.exists()
    assert not MCPAccount.objects.filter(user=alice).exclude(sealed_tokens="").exists()


def _provider_accepts(oauth_provider: OAuthDemo, tokens: dict) -> tuple[bool, bool]:
    """Whether the provider still takes the access token, and the refresh token."""
    call = httpx2.post(
        oauth_provider.url,
        headers={
            "Authorization": f"Bearer {tokens['access_token']}",
            "Accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        timeout=10,
    )
    refresh = httpx2.post(
        f"{oauth_provider.base}/as/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        timeout=10,
    )
    return call.status_code != 401, refresh.status_code == 200


def test_disconnect_revokes_the_tokens_at_the_provider(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")
    account = MCPAccount.objects.get(user=alice, server=notes)
    tokens = unseal(account.sealed_tokens)
    assert account.revocation_endpoint == f"{oauth_provider.base}/as/revoke"
    assert _provider_accepts(oauth_provider, tokens) == (True, True)

    page = browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]), follow=True)

    assert b"Disconnected your account for notes." in page.content
    assert b"revoke" not in page.content
    revoked = [(e["hint"], e["known"]) for e in oauth_provider.events("revoke")]
    assert revoked == [("refresh_token", True), ("access_token", True)]
    assert _provider_accepts(oauth_provider, tokens) == (False, False)
    assert not MCPAccount.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    ("oauth_provider", "note"),
    [
        (("--revocation", "fail"), b"refused to revoke the refresh_token (503)"),
        (("--revocation", "slow"), b"did not answer in time"),
    ],
    indirect=["oauth_provider"],
)
def test_disconnect_forgets_the_tokens_even_when_the_provider_does_not_revoke(
    notes: MCPServer, alice, oauth_provider: OAuthDemo, note: bytes
) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")
    started = time.monotonic()

    page = browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]), follow=True)

    # The slow provider hangs 30 s; disconnect gives up on it after REVOKE_SECONDS (5 s):
    # well before the hang ends, with room for a loaded machine.
    assert time.monotonic() - started < min(REVOKE_SECONDS + 20, 25)
    assert b"Disconnected your account for notes." in page.content
    assert note in page.content and b"was not told to revoke" in page.content
    assert oauth_provider.events("revoke")
    assert not MCPAccount.objects.filter(user=alice).exists()
    assert "connect your account" in (l4_reason(alice, TOOL) or "")


@pytest.mark.parametrize(
    "oauth_provider", [("--revocation", "none"), ("--revocation", "elsewhere")], indirect=True
)
def test_no_token_is_sent_without_a_revocation_endpoint_on_the_issuers_host(
    notes: MCPServer, alice, oauth_provider: OAuthDemo
) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")
    assert MCPAccount.objects.get(user=alice).revocation_endpoint == ""

    page = browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]), follow=True)

    assert b"Disconnected your account for notes." in page.content
    assert not oauth_provider.events("revoke")
