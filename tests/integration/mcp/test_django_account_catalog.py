"""A per-user server's prompts, resources and tool pins, in the app.

Each user's own connection lists the server's prompts and resources; they are
offered to that user only (the API answers per signed-in user), and its tool
definitions are pinned like a shared server's. A real OAuth-protected MCP
server (tests/fakes/oauth_mcp_server.py); the test plays the browser.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from openprogram.mcp import get_mcp_accounts
from tools_app.mcp.models import MCPServer
from tools_app.mcp.selectors import mcp_server_status
from tools_app.mcp.services import mcp_server_approve_fingerprints

from .app_accounts import browser_for, connect, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _prompts(browser: Client) -> set[tuple[str, str]]:
    response = browser.get("/api/mcp/prompts")
    assert response.status_code == 200
    return {(p["server"], p["name"]) for p in response.json()}


def _resources(browser: Client) -> set[tuple[str, str]]:
    response = browser.get("/api/mcp/resources")
    assert response.status_code == 200
    return {(r["server"], r["uri"]) for r in response.json()}


def _render(browser: Client, tone: str = "warmly"):  # type: ignore[no-untyped-def]
    body = {"server": "notes", "name": "greeting", "arguments": {"tone": tone}}
    return browser.post("/api/mcp/prompts/render", body, content_type="application/json")


def _read(browser: Client):  # type: ignore[no-untyped-def]
    body = {"server": "notes", "uri": "notes://inbox"}
    return browser.post("/api/mcp/resources/read", body, content_type="application/json")


def test_alices_prompts_and_resources_are_offered_to_her_and_never_to_bob(
    notes: MCPServer, alice, bob
) -> None:
    alice_browser, bob_browser = browser_for(alice), browser_for(bob)

    connect(alice_browser, "alice-acct")

    assert ("notes", "greeting") in _prompts(alice_browser)
    assert ("notes", "notes://inbox") in _resources(alice_browser)
    assert _render(alice_browser).json() == {"text": "Say hello to alice-acct, warmly."}
    assert _read(alice_browser).json() == {"text": "3 unread notes"}
    # Bob has no account there: he sees none of it and cannot use it through hers.
    assert not {s for s, _ in _prompts(bob_browser)} & {"notes"}
    assert not {s for s, _ in _resources(bob_browser)} & {"notes"}
    assert _render(bob_browser).status_code == 404
    assert _read(bob_browser).status_code == 404


def test_each_user_renders_prompts_through_their_own_account(notes: MCPServer, alice, bob) -> None:
    alice_browser, bob_browser = browser_for(alice), browser_for(bob)
    connect(alice_browser, "alice-acct")
    connect(bob_browser, "bob-acct")

    assert _render(bob_browser, "briefly").json() == {"text": "Say hello to bob-acct, briefly."}
    assert _render(alice_browser).json() == {"text": "Say hello to alice-acct, warmly."}


def test_disconnect_withdraws_the_users_prompts_and_resources(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")

    browser.post(reverse("tools:mcp-account-disconnect", args=["notes"]))

    assert ("notes", "greeting") not in _prompts(browser)
    assert ("notes", "notes://inbox") not in _resources(browser)
    assert _render(browser).status_code == 404


def test_a_missing_prompt_argument_is_a_422_with_its_name(notes: MCPServer, alice) -> None:
    browser = browser_for(alice)
    connect(browser, "alice-acct")

    response = browser.post(
        "/api/mcp/prompts/render",
        {"server": "notes", "name": "greeting", "arguments": {}},
        content_type="application/json",
    )

    assert response.status_code == 422
    assert "tone" in response.json()["detail"]


def test_per_user_tool_definitions_are_trusted_on_first_use_and_changes_are_flagged(
    notes: MCPServer, alice
) -> None:
    connect(browser_for(alice), "alice-acct")

    wait_until(lambda: MCPServer.objects.get(pk=notes.pk).approved_fingerprints)
    first = MCPServer.objects.get(pk=notes.pk).approved_fingerprints
    assert set(first) == {"whoami", "write_note"}
    assert mcp_server_status(server=notes)["changed_tools"] == []

    # An approval that differs from what the server lists now (as after a silent change).
    notes.refresh_from_db()
    notes.approved_fingerprints = {**first, "whoami": "0" * 64}
    notes.save()
    wait_until(lambda: mcp_server_status(server=notes)["changed_tools"] == ["whoami"])
    assert get_mcp_accounts().status("notes", alice.pk)["state"] == "ready"  # keeps working

    approved = mcp_server_approve_fingerprints(server=notes)

    assert approved == first
    assert mcp_server_status(server=notes)["changed_tools"] == []
    assert MCPServer.objects.get(pk=notes.pk).approved_fingerprints == first
