"""The profile shown on Programs is in the URL, in Chromium at 1280x800 and 390x844 against
the real daphne server: a bare /programs/ names the profile it shows, choosing one (by
keyboard) pushes its URL, Back/Forward and a reload restore it, a link opens it, and a
link to a profile the user has not (someone else's) says so and shows nothing of theirs."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e


def _create_profile(page, name: str) -> None:
    page.fill("[data-testid=new-profile-name]", name)
    page.press("[data-testid=new-profile-name]", "Enter")
    expect(page.locator("[data-testid=profile-heading]")).to_have_text(name)


def _shows(page, name: str) -> None:
    expect(page).to_have_url(re.compile(rf".*/programs/\?profile={re.escape(name)}$"))
    expect(page.locator("[data-testid=profile-heading]")).to_have_text(name)
    current = page.locator("[data-testid=profile-link][aria-current=true]")
    expect(current).to_have_attribute("data-profile", name)


def test_the_selected_profile_is_in_the_url(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    # The bare page names the profile it shows (the active one), without a history entry.
    active = page.locator("[data-testid=profile-heading]").inner_text()
    _shows(page, active)
    first, second = (f"url-{page.size}-{n}-{uuid.uuid4().hex[:6]}" for n in ("a", "b"))
    _create_profile(page, first)
    _shows(page, first)
    _create_profile(page, second)
    _shows(page, second)
    # Choosing a profile by keyboard pushes its URL.
    page.locator(f"[data-testid=profile-link][data-profile='{first}']").focus()
    page.keyboard.press("Enter")
    _shows(page, first)
    page.go_back()
    _shows(page, second)
    page.reload()
    _shows(page, second)
    page.go_forward()
    _shows(page, first)
    # A link opens that profile, as a new tab would.
    page.goto(f"{server.url}/programs/?profile={second}")
    _shows(page, second)
    expect(page.get_by_test_id("profile-missing")).to_have_count(0)


def test_a_link_to_someone_elses_profile_opens_nothing_of_theirs(server, sized_page):
    page = sized_page
    secret = f"bobs-{page.size}-{uuid.uuid4().hex[:6]}"
    login(page, server, "bob")
    page.goto(server.url + "/programs/")
    _create_profile(page, secret)
    page.click("[data-testid=profile-tools] li[data-tool=bash] [data-testid=remove-tool]")
    expect(page.locator("[data-testid=profile-tools] li[data-tool=bash]")).to_have_count(0)
    bobs_link = page.url
    assert bobs_link.endswith(f"?profile={secret}")

    page.context.clear_cookies()
    login(page, server, "alice")
    page.goto(bobs_link)
    missing = page.get_by_test_id("profile-missing")
    expect(missing).to_be_visible()
    expect(missing).to_contain_text(f"You have no profile named “{secret}”")
    shown = page.locator("[data-testid=profile-heading]").inner_text()
    assert shown != secret
    expect(missing).to_contain_text(f"shows your profile “{shown}”")
    # Nothing of Bob's: not his profile in the list, and the tools are Alice's own.
    expect(page.locator(f"[data-testid=profile-link][data-profile='{secret}']")).to_have_count(0)
    expect(page.locator("[data-testid=profile-tools] li[data-tool=bash]")).to_have_count(1)
    # Choosing one of her profiles clears the message and names it in the URL.
    page.locator(f"[data-testid=profile-link][data-profile='{shown}']").click()
    _shows(page, shown)
    expect(missing).to_have_count(0)
