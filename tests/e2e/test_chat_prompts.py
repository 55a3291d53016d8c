"""Approval and question cards, Stop, and the small keyboard/dialog behaviours of the chat
page, in Chromium at 1280x800 and 390x844 against the real daphne server (offline model)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _start(page, server) -> None:
    login(page, server, "alice")
    open_new_conversation(page, server)


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _wait_completed_runs(page, count: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('.run[data-status=completed]').length >= n", arg=count
    )


def _in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + 40 <= size["height"]


def _focused_class(page) -> str:
    return page.evaluate("document.activeElement.className")


def test_an_approval_takes_focus_in_view_and_enter_approves(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash echo approved-by-keyboard")
    page.wait_for_selector(".approval")
    page.wait_for_function("() => document.activeElement.classList.contains('approve')")
    assert _in_viewport(page, ".tool-card[data-status=awaiting_approval]")
    assert page.locator(".approval .keys").inner_text() == "Enter approves · Esc denies"
    page.keyboard.press("Enter")
    done = page.locator(".tool-card[data-status=done]")
    done.wait_for()
    # The output is shown once (the live pane gives way to the result).
    assert done.locator(".tool-result").text_content().count("approved-by-keyboard") == 1
    assert done.locator(".tool-output").is_hidden()


def test_escape_denies(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash echo never")
    page.wait_for_function("() => document.activeElement.classList.contains('approve')")
    page.keyboard.press("Escape")
    page.wait_for_selector(".tool-card[data-status=denied]")
    page.wait_for_selector(".run[data-status=completed]")
    assert "never\n" not in page.locator(".tool-card .tool-result").text_content()


def test_allow_for_this_chat_skips_later_prompts_in_this_conversation_only(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash echo first")
    page.locator(".approval button.always").click()
    _wait_completed_runs(page, 1)
    assert page.locator(".approval button.always").count() == 0
    _send(page, "/bash echo second")
    _wait_completed_runs(page, 2)
    last = page.locator(".run").last
    assert "second" in last.locator(".tool-card[data-status=done] .tool-result").text_content()
    assert last.locator(".approval").count() == 0
    # Another conversation of the same user still asks.
    open_new_conversation(page, server)
    _send(page, "/bash echo elsewhere")
    page.wait_for_selector(".approval button.always")
    page.keyboard.press("Escape")
    page.wait_for_selector(".run[data-status=completed]")


def test_an_answered_question_leaves_one_card_without_live_buttons(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, '/ask_user_question {"question": "Tea or coffee?", "choices": ["tea", "coffee"]}')
    page.wait_for_selector(".question button.choice")
    page.wait_for_function("() => document.activeElement.classList.contains('choice')")
    assert _in_viewport(page, ".tool-card[data-status=awaiting_answer]")
    assert page.locator(".tool-card").count() == 1  # not a second card for the question
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the second choice
    page.wait_for_selector(".run[data-status=completed]")
    card = page.locator(".tool-card")
    assert card.count() == 1
    assert card.get_attribute("data-status") == "done"
    assert "coffee" in card.locator(".tool-result").text_content()
    assert page.locator(".question button").count() == 0
    assert "waiting for your answer" not in page.locator("#transcript").inner_text()


def test_a_stopped_call_says_stopped_not_error(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash sleep 30")
    page.locator(".approval button.approve").click()
    page.wait_for_selector(".tool-card[data-status=running]")
    page.click("#stop")
    card = page.locator(".tool-card[data-status=stopped]")
    card.wait_for(timeout=20_000)  # promptly: well before the 30 s sleep ends
    page.wait_for_selector(".run[data-status=stopped]")
    assert card.locator(".tool-status").inner_text() == "stopped"
    assert card.locator(".tool-duration").inner_text() != "0 ms"
    assert "ERROR" not in card.inner_text() and "cancelled" not in card.inner_text()
    page.reload()  # the same from history
    card = page.locator(".tool-card[data-status=stopped]")
    assert card.locator(".tool-status").inner_text() == "stopped"
    assert card.locator(".tool-duration").inner_text() != "0 ms"


def test_escape_closes_the_plus_menu_and_returns_focus_to_its_button(server, sized_page):
    page = sized_page
    _start(page, server)
    page.click("#plus-button")
    page.focus("#opt-plan")
    page.keyboard.press("Escape")
    assert page.locator("#plus-panel").is_hidden()
    assert page.evaluate("document.activeElement.id") == "plus-button"


def test_rename_and_delete_use_dialogs_not_browser_prompts(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "name me")
    page.wait_for_selector(".run[data-status=completed]")
    browser_dialogs = []
    page.on("dialog", lambda d: (browser_dialogs.append(d.type), d.dismiss()))
    if page.size == "phone":
        page.click("[data-testid=drawer-toggle]")
    item = page.locator("#conversation-list .conversation-item a[aria-current=true]").locator("..")
    menu_button = item.locator("[data-testid=conversation-menu-button]")
    # Touch on the phone, the mouse on the laptop: the "…" button is there without hover.
    if page.size == "phone":
        menu_button.tap()
    else:
        menu_button.click()
    page.get_by_role("menuitem", name="Rename").click()
    page.wait_for_selector("#rename-dialog[open]")
    page.fill("#rename-input", "Renamed by dialog")
    page.keyboard.press("Enter")
    page.wait_for_selector("#rename-dialog", state="hidden")
    assert page.text_content("#chat-title") == "Renamed by dialog"
    assert item.locator("a").inner_text() == "Renamed by dialog"
    # Saved: focus is back in the composer, and typing lands there.
    page.wait_for_function("() => document.activeElement?.id === 'composer-text'")
    page.keyboard.type("next words")
    assert page.input_value("#composer-text") == "next words"
    if page.size == "phone":
        page.click("[data-testid=drawer-toggle]")
    menu_button.click()
    page.get_by_role("menuitem", name="Delete").click()
    page.wait_for_selector("#delete-dialog[open]")
    assert "Renamed by dialog" in page.locator("#delete-dialog").inner_text()
    page.keyboard.press("Escape")  # cancels, focus back on the menu's button
    # The dialog's close event (which moves focus) is dispatched after the key press returns.
    page.wait_for_function(
        "() => document.activeElement?.dataset.testid === 'conversation-menu-button'"
    )
    conversation_path = page.url.removeprefix(server.url)
    link = f'#conversation-list a[href="{conversation_path}"]'
    assert page.locator(link).count() == 1
    menu_button.click()
    page.get_by_role("menuitem", name="Delete").click()
    page.click("#delete-dialog button.danger")
    page.wait_for_url(server.url + "/")
    assert browser_dialogs == []
    assert page.locator(link).count() == 0


def test_the_chat_menu_works_from_the_keyboard_alone(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "keyboard menu")
    page.wait_for_selector(".run[data-status=completed]")
    if page.size == "phone":
        page.click("[data-testid=drawer-toggle]")
    item = page.locator("#conversation-list .conversation-item a[aria-current=true]").locator("..")
    button = item.locator("[data-testid=conversation-menu-button]")
    conversation_id = item.get_attribute("data-conversation-id")
    button.focus()
    page.keyboard.press("Enter")  # opens, focus on the first item
    assert button.get_attribute("aria-expanded") == "true"
    focused = "() => document.activeElement?.textContent"
    assert page.evaluate(focused) == "Rename"
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == "Export as Markdown"
    assert page.evaluate("document.activeElement.getAttribute('href')") == (
        f"/c/{conversation_id}/export.md"
    )
    page.keyboard.press("End")
    assert page.evaluate(focused) == "Delete"
    page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == "Export as JSON"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # wraps
    assert page.evaluate(focused) == "Rename"
    page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == "Delete"
    page.keyboard.press("Escape")  # closes; focus back on the button; the drawer stays
    assert page.locator("[data-testid=conversation-menu]").is_hidden()
    assert button.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.dataset.testid") == "conversation-menu-button"
    assert page.locator("#chat-sidebar").is_visible()
    page.keyboard.press("ArrowUp")  # opens on the last item
    assert page.evaluate(focused) == "Delete"
    page.keyboard.press("Home")
    page.keyboard.press("Enter")  # Rename
    page.wait_for_selector("#rename-dialog[open]")
    page.keyboard.press("Escape")
    page.wait_for_function(
        "() => document.activeElement?.dataset.testid === 'conversation-menu-button'"
    )
