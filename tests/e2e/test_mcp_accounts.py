"""Per-user MCP accounts in Chromium: Connect → provider consent → tools offered → Disconnect.

A daphne server of its own (its MCP server row must exist before start-up) and a
real OAuth-protected MCP server with its own consent page (tests/fakes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login, open_new_conversation
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo
from tests.servers import DaphneServer, make_server
from tools_app.mcp.models import MCPServer

pytestmark = pytest.mark.e2e

TOOL = "mcp__notes__whoami"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path_factory.mktemp("oauth-demo")) as running:
        yield running


@pytest.fixture(scope="module")
def site(tmp_path_factory, demo: OAuthDemo) -> Iterator[DaphneServer]:
    srv = make_server(tmp_path_factory.mktemp("accounts-home"))
    srv.create_users()
    _add_notes_server(srv, demo)
    srv.start()
    yield srv
    srv.stop()


def _add_notes_server(srv: DaphneServer, demo: OAuthDemo) -> None:
    """The demo's "notes" server, with an account per user, in ``srv``'s database."""
    srv.insert(
        MCPServer,
        name="notes",
        transport="http",
        url=demo.url,
        per_user_auth=True,
        timeout_seconds=10,
    )


def _explain(page: Page, tool: str) -> dict:
    """The resolve API's explain row for ``tool``, asked from the page with its session."""
    rows = page.evaluate(
        """async () => {
            const headers = JSON.parse(document.body.getAttribute('hx-headers'));
            const r = await fetch('/api/resolve', {method: 'POST',
                headers: {...headers, 'Content-Type': 'application/json'},
                body: JSON.stringify({})});
            return (await r.json()).explain;
        }"""
    )
    return next(row for row in rows if row["name"] == tool)


def _account(page: Page):  # type: ignore[no-untyped-def]
    return page.locator("[data-testid=mcp-account-notes]")


def test_alice_connects_her_account_through_the_consent_page_and_disconnects(
    site: DaphneServer, demo: OAuthDemo, browser
) -> None:
    alice = browser.new_context()
    alice.set_default_timeout(20_000)
    page = alice.new_page()
    login(page, site, "alice")
    page.goto(site.url + "/programs/")
    expect(_account(page).locator("[data-testid=mcp-account-state]")).to_have_text("not connected")

    _account(page).get_by_role("button", name="Connect").click()
    page.get_by_test_id("mcp-oauth-continue").click()
    expect(page.get_by_role("heading")).to_have_text("Allow OpenProgram to use your demo tools?")
    page.get_by_label("Account").fill("alice-acct")
    page.get_by_role("button", name="Allow").click()

    # Back on Programs, whose address then names the profile shown (?profile=…).
    expect(page).to_have_url(
        re.compile(re.escape(site.url + "/programs/") + r"(\?profile=[\w-]+)?$")
    )
    expect(page.locator(".messages")).to_contain_text("Your account for notes is connected.")
    expect(_account(page).locator("[data-testid=mcp-account-state]")).to_have_text("connected")
    assert _explain(page, TOOL).get("layer") != "L4"

    # Bob, in his own browser, is told to connect his account; alice's does not count for him.
    bob = browser.new_context()
    bob_page = bob.new_page()
    login(bob_page, site, "bob")
    bob_page.goto(site.url + "/programs/")
    expect(_account(bob_page).locator("[data-testid=mcp-account-state]")).to_have_text(
        "not connected"
    )
    bob_row = _explain(bob_page, TOOL)
    assert bob_row["layer"] == "L4" and "connect your account" in bob_row["reason"]
    bob.close()

    _account(page).get_by_role("button", name="Disconnect").click()

    expect(page.locator(".messages")).to_contain_text("Disconnected your account for notes.")
    expect(_account(page).locator("[data-testid=mcp-account-state]")).to_have_text("not connected")
    row = _explain(page, TOOL)
    assert row["layer"] == "L4" and "connect your account" in row["reason"]
    alice.close()


def _connect(page: Page, site: DaphneServer, account: str) -> None:
    page.goto(site.url + "/programs/")
    _account(page).get_by_role("button", name="Connect").click()
    page.get_by_test_id("mcp-oauth-continue").click()
    page.get_by_label("Account").fill(account)
    page.get_by_role("button", name="Allow").click()
    expect(page.locator(".messages")).to_contain_text("Your account for notes is connected.")


def test_alices_own_account_gives_her_slash_commands_and_resources_that_bob_never_sees(
    site: DaphneServer, browser
) -> None:
    alice = browser.new_context()
    alice.set_default_timeout(20_000)
    page = alice.new_page()
    login(page, site, "alice")
    _connect(page, site, "alice-acct")
    open_new_conversation(page, site)

    page.fill("#composer-text", "/gre")
    page.get_by_role("button", name="/greeting").click()
    page.get_by_label("tone *", exact=True).fill("warmly")
    page.get_by_role("button", name="Insert prompt").click()
    expect(page.locator("#composer-text")).to_have_value("Say hello to alice-acct, warmly.")
    page.fill("#composer-text", "")
    page.get_by_test_id("resource-button").click()
    page.get_by_role("button", name="inbox notes://inbox · notes").click()
    expect(page.locator("#composer-text")).to_have_value(
        "[Resource inbox <notes://inbox> from notes]\n3 unread notes\n"
    )

    bob = browser.new_context()
    bob.set_default_timeout(20_000)
    bob_page = bob.new_page()
    login(bob_page, site, "bob")
    open_new_conversation(bob_page, site)
    bob_page.get_by_test_id("resource-button").click()
    expect(bob_page.locator("#resource-panel")).to_contain_text("No MCP server offers resources.")
    prompts = bob_page.evaluate("""async () => (await fetch('/api/mcp/prompts')).json()""")
    assert prompts == []
    bob.close()

    page.goto(site.url + "/programs/")
    _account(page).get_by_role("button", name="Disconnect").click()
    expect(page.locator(".messages")).to_contain_text("Disconnected your account for notes.")
    alice.close()
