"""Per-user accounts in the app: Connect → consent → callback → tools offered → Disconnect.

A real OAuth-protected MCP server with its own authorization server
(tests/fakes/oauth_mcp_server.py); the test plays the browser at the consent page.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.test import Client
from django.urls import reverse

from openprogram.mcp import get_mcp_accounts
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo
from tools_app.mcp_account_models import MCPAccount
from tools_app.mcp_models import MCPServer
from tools_app.mcp_services import mcp_servers_start, mcp_servers_stop
from tools_app.mcp_token_crypto import unseal
from tools_app.selectors import resolution_for

from .conftest import WAIT

TOOL = "mcp__notes__whoami"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path) as running:
        yield running


@pytest.fixture
def notes(clean_registry, demo: OAuthDemo) -> Iterator[MCPServer]:
    row = MCPServer.objects.create(
        name="notes", transport="http", url=demo.url, per_user_auth=True, timeout_seconds=10
    )
    mcp_servers_start()
    _wait(lambda: "notes" in get_mcp_accounts().names())
    yield row
    mcp_servers_stop()


def _wait(condition) -> None:  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _browser(user) -> Client:  # type: ignore[no-untyped-def]
    # OAuth 2.1 allows plain-http redirect URIs only on loopback: the app is at 127.0.0.1 here.
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    return browser


def _start_connect(browser: Client) -> str:
    response = browser.post(reverse("tools:mcp-account-connect", args=["notes"]))
    assert response.status_code == 200, response.content
    return response.context["url"]


def _consent(url: str, account: str, decision: str = "allow") -> str:
    """Fill in the provider's consent page; the callback path + query it redirects to."""
    page = httpx2.get(url, timeout=10)
    assert "Allow OpenProgram" in page.text
    fields = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    answer = httpx2.post(
        url.split("?")[0], data={**fields, "account": account, "decision": decision}, timeout=10
    )
    location = urlsplit(answer.headers["location"])
    assert location.path == reverse("tools:mcp-oauth-callback")
    return f"{location.path}?{location.query}"


def _connect(browser: Client, account: str) -> None:
    callback = _consent(_start_connect(browser), account)
    response = browser.get(callback)
    assert response.status_code == 302


def _l4_reason(user, tool: str) -> str | None:  # type: ignore[no-untyped-def]
    resolution = resolution_for(owner=user, profile_name="default")
    for decision in resolution.decisions:
        if decision.name == tool:
            return decision.reason if decision.layer == "L4" and not decision.offered else None
    raise AssertionError(f"{tool} is not in the resolution")


def test_alice_connects_her_account_and_only_she_is_offered_the_tools(
    notes: MCPServer, alice, bob
) -> None:
    browser = _browser(alice)

    _connect(browser, "alice-acct")

    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"
    assert _l4_reason(alice, TOOL) is None
    assert "connect your account" in (_l4_reason(bob, TOOL) or "")
    page = browser.get(reverse("tools:programs"))
    assert b"Your account for notes is connected." in page.content
    assert b"Disconnect" in page.content


def test_tokens_are_stored_sealed_and_never_shown(notes: MCPServer, alice) -> None:
    browser = _browser(alice)
    _connect(browser, "alice-acct")

    account = MCPAccount.objects.get(user=alice, server=notes)
    tokens = unseal(account.sealed_tokens)
    assert tokens["access_token"] not in account.sealed_tokens
    assert tokens["refresh_token"] not in account.sealed_tokens
    page = browser.get(reverse("tools:programs"))
    assert tokens["access_token"].encode() not in page.content


def test_bob_cannot_finish_alices_authorization(notes: MCPServer, alice, bob) -> None:
    alice_browser = _browser(alice)
    callback = _consent(_start_connect(alice_browser), "alice-acct")

    stolen = _browser(bob).get(callback)

    assert stolen.status_code == 403
    assert b"another user" in stolen.content
    assert not MCPAccount.objects.filter(user=bob).exists()
    # Alice's own flow is untouched by the attempt.
    assert alice_browser.get(callback).status_code == 302
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"


def test_a_callback_with_an_unknown_state_is_refused(notes: MCPServer, alice) -> None:
    response = _browser(alice).get(
        reverse("tools:mcp-oauth-callback"), {"state": "made-up", "code": "x"}
    )

    assert response.status_code == 400
    assert b"unknown or has expired" in response.content


def test_a_refused_consent_stores_nothing_and_says_so(notes: MCPServer, alice) -> None:
    browser = _browser(alice)
    callback = _consent(_start_connect(browser), "alice-acct", decision="deny")

    response = browser.get(callback, follow=True)

    assert b"access_denied" in response.content
    assert not MCPAccount.objects.filter(user=alice).exclude(sealed_tokens="").exists()
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "stopped"


def test_disconnect_forgets_the_tokens_and_withholds_the_tools(
    notes: MCPServer, alice, bob
) -> None:
    alice_browser = _browser(alice)
    bob_browser = _browser(bob)
    _connect(alice_browser, "alice-acct")
    _connect(bob_browser, "bob-acct")

    response = alice_browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]))

    assert response.status_code == 302
    assert not MCPAccount.objects.filter(user=alice).exists()
    assert "connect your account" in (_l4_reason(alice, TOOL) or "")
    # Bob's account is his own: alice disconnecting does not touch it.
    assert MCPAccount.objects.filter(user=bob).exists()
    assert _l4_reason(bob, TOOL) is None


def test_stored_accounts_reconnect_at_start_without_asking(
    notes: MCPServer, alice, demo: OAuthDemo
) -> None:
    _connect(_browser(alice), "alice-acct")
    mcp_servers_stop()

    mcp_servers_start()

    _wait(lambda: "notes" in get_mcp_accounts().names())
    status = get_mcp_accounts().wait_for(
        "notes", alice.pk, lambda s: s["state"] == "ready", timeout=WAIT
    )
    assert status["state"] == "ready"
    # One consent in all: the restart used the stored tokens.
    assert [e["grant_type"] for e in demo.events("token")] == ["authorization_code"]


def test_connect_is_refused_for_a_server_without_per_user_accounts(notes: MCPServer, alice) -> None:
    MCPServer.objects.create(name="shared", command="true")

    response = _browser(alice).post(reverse("tools:mcp-account-connect", args=["shared"]))

    assert response.status_code == 404


def test_the_admin_status_counts_user_sessions_instead_of_one_state(
    notes: MCPServer, alice
) -> None:
    from tools_app.mcp_selectors import mcp_server_status

    _connect(_browser(alice), "alice-acct")

    status = mcp_server_status(server=notes)

    assert status["state"] == "per-user"
    assert status["user_sessions"] == {"open": 1, "ready": 1}
    assert TOOL in status["tools"]
