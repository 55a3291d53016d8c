"""The Programs page in Chromium against a real daphne server."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e


def _unique(prefix: str) -> str:
    # The server is shared by the whole e2e session; names must not collide across tests.
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _cost(page: Page, which: str) -> int:
    return int(page.text_content(f"[data-testid=cost-{which}]").strip())


def _create_profile(page: Page, name: str) -> None:
    page.fill("[data-testid=new-profile-name]", name)
    page.press("[data-testid=new-profile-name]", "Enter")  # keyboard submit
    expect(page.locator("[data-testid=profile-heading]")).to_have_text(name)


def _resolve(page: Page, profile: str) -> dict:
    """POST /api/resolve from the page, with the session cookie and CSRF header."""
    return page.evaluate(
        """async (profile) => {
            const headers = JSON.parse(document.body.getAttribute('hx-headers'));
            const r = await fetch('/api/resolve', {method: 'POST',
                headers: {...headers, 'Content-Type': 'application/json'},
                body: JSON.stringify({profile})});
            return await r.json();
        }""",
        profile,
    )


def test_alice_creates_trims_and_renames_a_profile_and_sees_the_cost_fall(server, page):
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    name = _unique("research")
    _create_profile(page, name)
    expect(page).to_have_url(re.compile(rf".*/programs/\?profile={name}$"))
    tools_before, tokens_before = _cost(page, "tools"), _cost(page, "tokens")
    assert tokens_before > 0

    for tool in ("bash", "write"):
        page.click(f"[data-testid=profile-tools] li[data-tool={tool}] [data-testid=remove-tool]")
        expect(page.locator(f"[data-testid=profile-tools] li[data-tool={tool}]")).to_have_count(0)
    expect(page.locator("[data-testid=cost-tools]")).to_have_text(str(tools_before - 2))
    assert _cost(page, "tokens") < tokens_before
    expect(page.locator("[data-testid=resolved-tools] li[data-tool=bash]")).to_have_count(0)
    catalog_bash = page.locator("[data-testid=catalog-tool][data-tool=bash]")
    expect(catalog_bash.locator("[data-testid=badge-in-profile]")).to_have_count(0)
    catalog_read = page.locator("[data-testid=catalog-tool][data-tool=read]")
    expect(catalog_read.locator("[data-testid=badge-in-profile]")).to_have_count(1)

    renamed = _unique("lean")
    page.fill("[data-testid=rename-input]", renamed)
    page.click("[data-testid=rename-profile]")
    expect(page.locator("[data-testid=profile-heading]")).to_have_text(renamed)
    expect(page.locator(f"[data-testid=profile-link][data-profile='{renamed}']")).to_have_count(1)
    expect(page.locator(f"[data-testid=profile-link][data-profile='{name}']")).to_have_count(0)

    # The change is stored: a fresh load shows the renamed, trimmed profile.
    page.goto(f"{server.url}/programs/?profile={renamed}")
    expect(page.locator("[data-testid=profile-tools] li[data-tool=bash]")).to_have_count(0)
    expect(page.locator("[data-testid=profile-tools] li[data-tool=read]")).to_have_count(1)


def test_validation_errors_show_inline_and_delete_asks_first(server, page):
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    name = _unique("dupe")
    _create_profile(page, name)
    page.fill("[data-testid=new-profile-name]", name.upper())
    page.click("[data-testid=create-profile]")
    error = page.locator("[data-testid=form-error]")
    expect(error).to_contain_text("already have a tool profile")
    expect(page.locator("#new-profile-name")).to_have_attribute("aria-invalid", "true")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("[data-testid=delete-profile]")
    expect(page.locator("[data-testid=profile-heading]")).to_have_text("default")
    expect(page.locator(f"[data-testid=profile-link][data-profile='{name}']")).to_have_count(0)
    expect(page.locator("[data-testid=default-note]")).to_be_visible()
    expect(page.locator("[data-testid=rename-profile]")).to_have_count(0)


def test_search_finds_a_tool_and_the_detail_says_why_it_is_unavailable(server, page):
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    page.click("[data-testid=catalog-search]")
    page.keyboard.type("web_sea")
    expect(page.locator("[data-testid=catalog-tool][data-tool=bash]")).to_have_count(0)
    row = page.locator("[data-testid=catalog-tool][data-tool=web_search]")
    expect(row).to_have_count(1)
    expect(row.locator("[data-testid=badge-unavailable]")).to_be_visible()
    row.locator("button.tool-name").click()
    why = page.locator("[data-testid=tool-why]")
    expect(why).to_contain_text("Not offered: Can't run right now:")
    expect(page.locator("[data-testid=tool-why-layer] code")).to_have_text("L4")
    expect(page.locator("[data-testid=tool-schema]")).to_contain_text('"query"')


def test_staff_disables_a_tool_and_it_leaves_the_resolved_set(server, page):
    login(page, server, "root")
    page.goto(server.url + "/programs/")
    resolved = page.locator("[data-testid=resolved-tools] li[data-tool=todo_read]")
    expect(resolved).to_have_count(1)
    assert "todo_read" in _resolve(page, "default")["tools"]
    page.locator("[data-testid=catalog-tool][data-tool=todo_read] button.tool-name").click()
    try:
        page.fill("#disable-reason", "e2e: checking the global off switch")
        page.click("[data-testid=tool-disable]")
        expect(page.locator("[data-testid=tool-why]")).to_have_text(
            "Not offered: Turned off for everyone by an admin: e2e: checking the global off switch."
        )
        # The profile's resolved set and the catalog badge refresh without a reload.
        expect(resolved).to_have_count(0)
        catalog_row = page.locator("[data-testid=catalog-tool][data-tool=todo_read]")
        expect(catalog_row.locator("[data-testid=badge-disabled]")).to_be_visible()
        body = _resolve(page, "default")
        assert "todo_read" not in body["tools"]
        entry = next(e for e in body["explain"] if e["name"] == "todo_read")
        assert entry["layer"] == "L5"
        page.click("[data-testid=tool-enable]")
        expect(resolved).to_have_count(1)
    finally:
        server.sql(
            "UPDATE tools_app_tool SET disabled = 0, disabled_reason = '' WHERE name = 'todo_read'"
        )
    assert "todo_read" in _resolve(page, "default")["tools"]


def test_alice_gets_no_global_switch(server, page):
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    page.locator("[data-testid=catalog-tool][data-tool=read] button.tool-name").click()
    expect(page.locator("[data-testid=tool-detail]")).to_be_visible()
    expect(page.locator("[data-testid=tool-disable]")).to_have_count(0)


def test_alice_creates_an_agent_profile_on_a_tool_profile(server, page):
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    toolset = _unique("agentset")
    _create_profile(page, toolset)
    page.click("text=Agent profiles")
    new_form = page.locator("[data-testid=agent-form][data-agent='']")
    agent = _unique("bot")
    new_form.get_by_label("Name").fill(agent)
    new_form.get_by_label("Toolset").select_option(toolset)
    new_form.get_by_label("Disable").fill("bash")
    new_form.get_by_role("button", name="Create").click()
    saved = page.locator(f"[data-testid=agent-form][data-agent='{agent}']")
    expect(saved.get_by_label("Toolset")).to_have_value(toolset)
    expect(saved.get_by_label("Disable")).to_have_value("bash")
    page.once("dialog", lambda dialog: dialog.accept())
    saved.get_by_role("button", name="Delete").click()
    expect(saved).to_have_count(0)
