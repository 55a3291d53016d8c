"""The account page, issue #17 items 4 and 11, at 1280x800 and 390x844 in Chromium.

`make run`'s admin (a one-time link, no password) sets a password and gets back in
after logging out; the theme applies site-wide without a script; new chats start with
the chosen profile; staff see the configured models; the admin's tools list puts the
global switch beside the name.
"""

from __future__ import annotations

import re
import secrets
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.utils import timezone
from playwright.sync_api import Page, expect

from accounts.models import LoginToken
from accounts.services import LOGIN_TOKEN_TTL
from accounts.services import _hash as login_token_hash
from tests.e2e.conftest import login
from tests.e2e.sizes import SIZES, sized_page

pytestmark = pytest.mark.e2e
NEW_PASSWORD = "correct-horse-battery-e2e"
DARK_BG, LIGHT_BG = "rgb(20, 23, 28)", "rgb(246, 247, 249)"


@pytest.fixture
def spage(browser, size):
    yield from sized_page(browser, size)


def _one_time_link(server) -> tuple[str, str]:
    """A fresh administrator with no usable password, as `make run` creates, and its link."""
    username = f"runadmin-{uuid.uuid4().hex[:6]}"
    admin = server.insert(
        get_user_model(),
        username=username,
        password=make_password(None),  # what create_superuser(password=None) stores
        is_staff=True,
        is_superuser=True,
    )
    token = secrets.token_urlsafe(32)
    server.insert(
        LoginToken,
        user_id=admin.pk,
        token_hash=login_token_hash(token),  # only its hash is stored, as the app stores it
        expires_at=timezone.now() + LOGIN_TOKEN_TTL,
    )
    return username, f"{server.url}/login/token/{token}/"


def _background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.documentElement).backgroundColor")


@SIZES
def test_the_make_run_admin_sets_a_password_and_gets_back_in_after_logout(server, spage, size):
    page = spage
    username, link = _one_time_link(server)
    page.goto(link)
    expect(page).to_have_url(re.compile(r".*/account/$"))
    expect(page.locator(".messages")).to_contain_text("Set a password so you can sign in again")
    # The banner is a link to the form it asks for.
    to_form = page.get_by_test_id("set-password-link")
    expect(to_form).to_have_attribute("href", "/account/#password-heading")
    to_form.click()
    expect(page).to_have_url(re.compile(r".*/account/#password-heading$"))
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.click("[data-testid=password-form] button[type=submit]")
    expect(page.locator(".messages")).to_contain_text("Password saved.")

    page.click("text=Log out")
    expect(page).to_have_url(re.compile(r".*/login/$"))
    expect(page.locator("main")).to_contain_text("manage.py login_link")
    page.fill("#id_username", username)
    page.fill("#id_password", "not-" + NEW_PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator(".card p.error")).to_contain_text("correct username and password")
    # A wrong password keeps the username; the password box has focus for the retry.
    expect(page.locator("#id_username")).to_have_value(username)
    expect(page.locator("#id_password")).to_be_focused()
    page.fill("#id_password", NEW_PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("[data-testid=username]")).to_have_text(username)
    page.goto(server.url + "/admin/")
    expect(page.locator("#site-name")).to_contain_text("OpenProgram administration")
    # The spent link stays spent.
    page.goto(link)
    expect(page.locator("body")).to_contain_text("already used")


@SIZES
def test_the_theme_applies_on_every_page_and_follows_the_system(server, spage, size):
    page = spage
    login(page, server, "bob")
    page.goto(server.url + "/account/")
    page.check("[data-testid=theme-dark]")
    page.click("[data-testid=save-settings]")
    expect(page.locator(".messages")).to_contain_text("Settings saved.")
    for url in ("/programs/", "/usage/", "/account/"):
        page.goto(server.url + url)
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert _background(page) == DARK_BG

    page.check("[data-testid=theme-system]")
    page.click("[data-testid=save-settings]")
    expect(page.locator("html")).to_have_attribute("data-theme", "system")
    page.emulate_media(color_scheme="dark")
    assert _background(page) == DARK_BG
    page.emulate_media(color_scheme="light")
    assert _background(page) == LIGHT_BG


@SIZES
def test_a_new_chat_starts_with_the_profile_chosen_in_settings(server, spage, size):
    page = spage
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    name = f"chosen-{uuid.uuid4().hex[:6]}"
    page.fill("[data-testid=new-profile-name]", name)
    page.click("[data-testid=create-profile]")
    expect(page.locator("[data-testid=profile-heading]")).to_have_text(name)

    page.goto(server.url + "/account/")
    page.select_option("[data-testid=default-profile]", name)
    page.select_option("[data-testid=default-model]", "offline")
    page.click("[data-testid=save-settings]")
    expect(page.locator(".messages")).to_contain_text("Settings saved.")
    expect(page.locator("[data-testid=default-profile]")).to_have_value(name)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    created = page.request.post(
        server.url + "/api/conversations",
        headers={"X-CSRFToken": token, "Content-Type": "application/json"},
        data={},
    )
    assert created.status == 201, created.text()
    assert (created.json()["profile"], created.json()["model"]) == (name, "offline")
    page.goto(server.url + "/account/")
    page.select_option("[data-testid=default-profile]", "default")
    page.click("[data-testid=save-settings]")
    expect(page.locator(".messages")).to_contain_text("Settings saved.")


@SIZES
def test_staff_see_the_models_and_key_state_and_others_do_not(server, spage, size):
    page = spage
    login(page, server, "root", fresh=True)  # its own session: the test logs it out
    page.goto(server.url + "/account/")
    row = page.locator("[data-testid=model-status] tr[data-model=offline]")
    expect(row.locator("[data-testid=key-status]")).to_have_text("not needed")
    page.click("text=Log out")
    login(page, server, "alice")
    page.goto(server.url + "/account/")
    expect(page.locator("[data-testid=settings-form]")).to_be_visible()
    expect(page.locator("[data-testid=model-status]")).to_have_count(0)


@SIZES
def test_the_admin_tools_list_has_the_disable_switch_beside_the_name(server, spage, size):
    page = spage
    login(page, server, "root")
    page.goto(server.url + "/admin/tools_app/tool/")
    headers = page.locator("#result_list thead th").evaluate_all(
        "ths => ths.map(th => th.className.split(' ').find(c => c.startsWith('column-')))"
    )
    assert [h for h in headers if h][:3] == [
        "column-name",
        "column-disabled",
        "column-disabled_reason",
    ]
    first = page.locator("#result_list tbody tr").first
    expect(first.locator("td.field-disabled input[type=checkbox]")).to_be_visible()
