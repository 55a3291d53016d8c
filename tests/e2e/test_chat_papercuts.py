"""The small things of the chat and the pages around it, in Chromium at 1280x800 and
390x844 against the real daphne server (offline model, no MCP server, no search
backend): controls that could do nothing say so, the account link and the theme are in
reach, keyboard shortcuts that leave the browser's own alone, files attached by paste
and by drop, message times on hover and focus, and the Programs page's terms explained."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def test_controls_that_could_do_nothing_are_hidden_or_say_why(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    # No MCP server: no Resources button.
    assert page.locator("[data-testid=resource-button]").count() == 0
    page.click("#plus-button")
    web = page.locator("#opt-web")
    expect(web).to_be_disabled()
    assert not web.is_checked()
    # The reason is its accessible name and its title.
    expect(
        page.get_by_role("checkbox", name=re.compile("Web search.*no web search backend"))
    ).to_have_count(1)
    assert "no web search backend" in web.locator("xpath=..").get_attribute("title")
    assert "no web search" not in page.locator("#option-chips").inner_text()
    # Every picker has a label a person can see (on the phone, behind "+").
    for name in ("Profile", "Model", "Agent"):
        label = page.locator(f"label.inline:text-is('{name}')")
        assert label.is_visible(), name
        expect(page.get_by_label(name, exact=True)).to_be_visible()


def test_the_account_link_says_settings_and_the_theme_is_one_click_away(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    expect(page).to_have_url(re.compile(r".*/programs/\?profile=[^&]+$"))  # names its profile
    programs = page.url
    account = page.get_by_role("link", name="alice · Account · settings")
    expect(account).to_be_visible()
    html = page.locator("html")
    before = html.get_attribute("data-theme")
    seen = []
    for _ in range(3):  # light → dark → system, each time back on the same page
        page.get_by_test_id("theme-switch").click()
        expect(page).to_have_url(programs)
        expect(html).not_to_have_attribute("data-theme", seen[-1] if seen else before)
        seen.append(html.get_attribute("data-theme"))
    assert sorted(seen) == ["dark", "light", "system"] and seen[-1] == before
    account.click()
    expect(page).to_have_url(server.url + "/account/")


def test_keyboard_shortcuts_and_none_of_the_browsers(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    url = open_new_conversation(page, server)
    # In the message box, "/" and "?" are just typed (a slash command, a question).
    page.focus("#composer-text")
    page.keyboard.type("/?")
    assert page.input_value("#composer-text") == "/?"
    page.fill("#composer-text", "")
    page.locator("#chat-title").click()  # focus out of any field
    page.keyboard.press("?")
    dialog = page.get_by_test_id("shortcuts-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Alt+Shift+N")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.locator("#chat-title").click()
    page.keyboard.press("/")
    expect(page.locator("#conversation-search")).to_be_focused()
    page.keyboard.press("Escape")
    page.locator("#chat-title").click()
    page.keyboard.press("Alt+Shift+N")
    expect(page).to_have_url(server.url + "/")
    assert url != page.url


def test_files_attach_by_paste_and_by_drop(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    name = f"pasted-{page.size}.txt"
    page.evaluate(
        """name => {
          const data = new DataTransfer();
          data.items.add(new File(["from the clipboard\\n"], name, { type: "text/plain" }));
          document.getElementById("composer-text").dispatchEvent(
            new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
        }""",
        name,
    )
    chips = page.locator("#attachments li")
    expect(chips).to_have_count(1)
    assert chips.first.inner_text().startswith(f"uploads/{name}")
    assert page.input_value("#composer-text") == ""  # the file, not its name as text
    dropped = f"dropped-{page.size}.txt"
    page.evaluate(
        """name => {
          const data = new DataTransfer();
          data.items.add(new File(["dropped in\\n"], name, { type: "text/plain" }));
          const chat = document.getElementById("chat");
          chat.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
          chat.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
        }""",
        dropped,
    )
    expect(chips).to_have_count(2)
    assert chips.nth(1).inner_text().startswith(f"uploads/{dropped}")
    _send(page, f"/read path=uploads/{dropped}")
    page.wait_for_selector(".run[data-status=completed]")
    assert "dropped in" in page.locator(".tool-card .tool-result").text_content()


def test_programs_explains_its_terms(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(server.url + "/programs/")
    expect(page.get_by_test_id("cost-explained")).to_contain_text("Saved by deferral:")
    expect(page.locator("#import-explained")).to_contain_text("functions_meta.json is the file")
    why = page.get_by_test_id("layer-explained")
    expect(why).to_have_count(1)
    assert "L6 loaded on demand" in why.text_content()


def test_a_message_shows_its_time_on_hover_and_on_focus(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    _send(page, "what time is it")
    page.wait_for_selector(".run[data-status=completed]")
    time = page.locator(".run .msg.user time.msg-time")
    live = time.inner_text()
    assert re.fullmatch(r"\d{1,2}:\d{2}( ?[AP]M)?", live), live
    opacity = "t => getComputedStyle(t.closest('.msg-actions')).opacity"
    if page.size == "desktop":  # a phone has no hover: there the times are always shown
        page.locator("#chat-title").hover()
        assert time.evaluate(opacity) == "0"
        page.locator(".run .msg.user .bubble").hover()
        page.wait_for_function(
            f"() => ({opacity})(document.querySelector('time.msg-time')) === '1'"
        )
        page.locator("#chat-title").hover()
        page.locator(".run .msg.user [data-action=copy]").focus()  # the keyboard's way there
        page.wait_for_function(
            f"() => ({opacity})(document.querySelector('time.msg-time')) === '1'"
        )
    page.reload()
    assert page.locator(".run .msg.user time.msg-time").inner_text() == live
