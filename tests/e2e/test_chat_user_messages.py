"""A person's own messages, in Chromium at 1280x800 and 390x844 against the real daphne
server (offline model): shown as Markdown by the same safe renderer as replies, live and
after a reload (raw HTML stays inert text), and with the time they were sent on hover and
focus, also in a tab that opens, or reconnects, while the reply is still running."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e

HOSTILE = (
    "Please **read** `notes.txt`\n"
    "second line\n\n"
    "- one\n- two\n\n"
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    "[click](javascript:window.__pwned=3)"
)


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _message(page):
    """The latest run's message once the server's rendering has replaced the live text."""
    message = page.locator(".run .msg.user:not([data-pending])").last
    message.wait_for()
    return message


def _rendered(message) -> dict:
    text = message.locator(".user-text")
    return {
        "strong": text.locator("strong").all_inner_texts(),
        "code": text.locator("code").all_inner_texts(),
        "items": text.locator("li").all_inner_texts(),
        "breaks": text.locator("br").count(),
        "unsafe": text.locator("img, script, a").count(),
        "html": message.locator(".bubble").inner_html(),
    }


def test_a_message_is_markdown_live_and_after_reload_and_raw_html_stays_text(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    _send(page, HOSTILE)
    page.wait_for_selector(".run[data-status=completed]")
    live = _rendered(_message(page))
    assert live["strong"] == ["read"] and live["code"] == ["notes.txt"]
    assert live["items"] == ["one", "two"]
    assert live["breaks"] == 1  # a single line break stays one, as typed
    assert live["unsafe"] == 0  # no element from the raw HTML, no javascript: link
    shown = _message(page).locator(".user-text").inner_text()
    assert '<img src=x onerror="window.__pwned=1">' in shown
    assert "<script>window.__pwned=2</script>" in shown
    assert "[click](javascript:window.__pwned=3)" in shown
    assert page.evaluate("() => window.__pwned") is None
    page.reload()
    assert _rendered(_message(page)) == live
    assert page.evaluate("() => window.__pwned") is None
    # Edit (keyboard only) gives back the text as typed, not the rendering.
    message = _message(page)
    message.locator("[data-action=edit]").focus()
    page.keyboard.press("Enter")
    assert page.input_value(".edit-box textarea") == HOSTILE


def test_the_first_message_of_a_new_chat_is_markdown_too(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(server.url + "/")
    _send(page, "# Plan\n\n1. *first*")
    page.wait_for_url(re.compile(r".*/c/[0-9a-f-]+/$"))
    message = _message(page)
    expect(message.locator(".user-text h1")).to_have_text("Plan")
    expect(message.locator(".user-text ol li em")).to_have_text("first")


def test_another_users_message_is_not_found(server, page):
    login(page, server, "alice")
    open_new_conversation(page, server)
    _send(page, "alice's *private* words")
    page.wait_for_selector(".run[data-status=completed]")
    run_id = page.locator(".run").last.get_attribute("data-run-id")
    own = page.request.get(f"{server.url}/runs/{run_id}/message/")
    assert own.status == 200 and "<em>private</em>" in own.text()
    page.context.clear_cookies()
    login(page, server, "bob")
    other = page.request.get(f"{server.url}/runs/{run_id}/message/")
    assert other.status == 404
    assert "private" not in other.text()


def _time_shown(page, message) -> bool:
    opacity = "t => getComputedStyle(t.closest('.msg-actions')).opacity"
    return message.locator("time.msg-time").evaluate(opacity) == "1"


def test_a_tab_opened_while_the_reply_runs_shows_when_the_message_was_sent(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    _send(page, "/bash sleep 30")
    page.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    page.wait_for_selector(".tool-card[data-status=running]")
    sent = _message(page).locator("time.msg-time")
    sent_at = sent.get_attribute("datetime")
    label = sent.inner_text()
    assert re.fullmatch(r"\d{1,2}:\d{2}( ?[AP]M)?", label), label
    page.wait_for_timeout(1500)  # a tab that made up the time would be seconds late

    other = page.context.new_page()
    other.size = page.size
    other.goto(page.url)
    other.wait_for_selector("#connection[data-state=open]")
    other.wait_for_selector(".run[data-status=running] .tool-card[data-status=running]")
    message = _message(other)
    time = message.locator("time.msg-time")
    expect(time).to_have_attribute("datetime", sent_at)
    assert time.inner_text() == label and time.get_attribute("title")
    if page.size == "desktop":  # a phone has no hover: there the times are always shown
        other.locator("#chat-title").hover()
        assert not _time_shown(other, message)
        message.locator(".bubble").hover()
        other.wait_for_function(
            "() => getComputedStyle(document.querySelector('.msg-actions')).opacity === '1'"
        )
        other.locator("#chat-title").hover()
        message.locator("[data-action=copy]").focus()  # the keyboard's way there
        other.wait_for_function(
            "() => getComputedStyle(document.querySelector('.msg-actions')).opacity === '1'"
        )
    else:
        assert _time_shown(other, message)
    other.click("#stop")
    other.wait_for_selector(".run[data-status=stopped]", timeout=20_000)
    # The time is still the one the message was sent at, in both tabs.
    expect(_message(other).locator("time.msg-time")).to_have_attribute("datetime", sent_at)
    expect(_message(page).locator("time.msg-time")).to_have_attribute("datetime", sent_at)
    other.close()


def test_a_tab_that_reconnects_mid_turn_shows_when_the_message_was_sent(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    url = open_new_conversation(page, server)
    # A second tab whose socket the test cuts, as a dropped network would: while `cut`
    # holds, every connection it opens is closed at once, so it misses the live events.
    other = page.context.new_page()
    cut, sockets = {"on": False}, []

    def route(ws):
        if cut["on"]:
            ws.close(code=4000, reason="cut by the test")
            return
        ws.connect_to_server()
        sockets.append(ws)

    other.route_web_socket(re.compile(r".*/ws/chat/.*"), route)
    other.goto(url)
    other.wait_for_selector("#connection[data-state=open]")
    cut["on"] = True
    sockets[-1].close(code=4000, reason="cut by the test")
    other.wait_for_selector("#connection[data-state=reconnecting]")
    _send(page, "/bash sleep 30")
    page.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    page.wait_for_selector(".tool-card[data-status=running]")
    sent_at = _message(page).locator("time.msg-time").get_attribute("datetime")
    page.wait_for_timeout(1500)  # a tab that made up the time would be seconds late
    assert other.locator(".run").count() == 0  # it saw nothing of the turn
    cut["on"] = False  # the next reconnect gets through: the run comes by catch-up
    other.wait_for_selector(".run[data-status=running] .tool-card[data-status=running]")
    message = _message(other)
    expect(message.locator("time.msg-time")).to_have_attribute("datetime", sent_at)
    assert message.locator("time.msg-time").inner_text()
    page.click("#stop")
    other.wait_for_selector(".run[data-status=stopped]", timeout=20_000)
    other.close()
