"""Tool cards that stay out of the way and focus that stays where typing goes, in Chromium
at 1280x800 and 390x844 against the real daphne server (offline model): finished calls
fold to one line (the same live and after a reload), a stopped call keeps what it printed,
and the composer gets focus back after an approval, a denial, a rename and the first
message's move from / to /c/<id>/."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _start(page, server) -> None:
    login(page, server, "alice")
    open_new_conversation(page, server)


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _wait_composer_focused(page) -> None:
    page.wait_for_function("() => document.activeElement?.id === 'composer-text'")


def _card_view(card) -> dict:
    """What a person sees of a card: its line, whether it is open, and its body opened."""
    line = " ".join(card.locator(":scope > summary").inner_text().split())
    was_open = card.evaluate("c => c.open")
    body = card.evaluate(
        "c => { const was = c.open; c.open = true;"
        " const text = c.querySelector(':scope > .tool-body').innerText; c.open = was; return text; }"
    )
    return {"line": line, "open": was_open, "body": body}


def test_a_finished_call_is_one_line_that_enter_opens_the_same_after_reload(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash echo folded-card")
    page.wait_for_function("() => document.activeElement?.classList.contains('approve')")
    page.keyboard.press("Enter")  # approves
    _wait_composer_focused(page)  # not dropped to the page
    page.keyboard.type("typed after approving")
    assert page.input_value("#composer-text") == "typed after approving"
    card = page.locator(".tool-card[data-status=done]")
    card.wait_for()
    page.wait_for_selector(".run[data-status=completed] .reply.markdown")
    live = _card_view(card)
    assert re.fullmatch(r"Used bash · [\d,]+ ms", live["line"]), live["line"]
    assert live["open"] is False
    assert card.locator(".tool-result").is_hidden()
    # Keyboard only: the line takes focus, Enter opens it.
    card.locator(":scope > summary").focus()
    page.keyboard.press("Enter")
    assert card.evaluate("c => c.open")
    assert "folded-card" in card.locator(".tool-result").inner_text()
    page.reload()
    page.wait_for_selector("#connection[data-state=open]")
    card = page.locator(".tool-card[data-status=done]")
    assert _card_view(card) == live


def test_escape_denies_and_the_composer_has_focus_again(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash echo never-run")
    page.wait_for_function("() => document.activeElement?.classList.contains('approve')")
    page.keyboard.press("Escape")
    _wait_composer_focused(page)
    card = page.locator(".tool-card[data-status=denied]")
    card.wait_for()
    page.wait_for_selector(".run[data-status=completed] .reply.markdown")
    assert card.evaluate("c => c.open") is False
    assert " ".join(card.locator("summary").inner_text().split()).startswith("bash · denied")


def test_a_failed_call_says_its_error_in_words_on_its_line(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/read path=no-such-file.txt")
    card = page.locator(".tool-card[data-status=error]")
    card.wait_for()
    page.wait_for_selector(".run[data-status=completed] .reply.markdown")
    line = " ".join(card.locator("summary").inner_text().split())
    first = card.locator(".tool-result").text_content().strip().splitlines()[0]
    assert line.startswith(f"read · error: {first[:40]}"), line
    live = _card_view(card)
    page.reload()
    assert _card_view(page.locator(".tool-card[data-status=error]")) == live


def test_a_running_call_is_open_and_a_stopped_one_keeps_what_it_printed(server, sized_page):
    page = sized_page
    _start(page, server)
    _send(page, "/bash for i in 1 2 3; do echo tick $i; sleep 0.1; done; sleep 30")
    page.locator(".approval button.approve").click()
    running = page.locator(".tool-card[data-status=running]")
    running.wait_for()
    assert running.evaluate("c => c.open")
    page.wait_for_function(
        "() => document.querySelector('.tool-card .tool-output')?.textContent.includes('tick 3')"
    )
    page.click("#stop")
    card = page.locator(".tool-card[data-status=stopped]")
    card.wait_for(timeout=20_000)
    page.wait_for_selector(".run[data-status=stopped]")
    live = _card_view(card)
    assert re.fullmatch(r"bash · stopped · [\d,]+ ms", live["line"]), live["line"]
    assert live["open"] is False
    card.locator("summary").click()
    tail = card.locator(".tool-result.is-stopped").inner_text()
    assert "tick 1\ntick 2\ntick 3" in tail
    assert "cancelled" not in tail
    page.reload()
    card = page.locator(".tool-card[data-status=stopped]")
    assert _card_view(card) == live


def test_the_first_message_keeps_the_composer_and_what_is_typed_next(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(server.url + "/")
    page.fill("#composer-text", "first message")
    page.press("#composer-text", "Enter")
    # Typed at once, while the conversation is being made: nothing may go missing.
    page.keyboard.type("Please read the notes")
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    page.wait_for_selector(".run[data-status=completed]")
    assert page.input_value("#composer-text") == "Please read the notes"
    assert page.evaluate("document.activeElement.id") == "composer-text"
    assert page.locator(".run .msg.user .bubble").inner_text() == "first message"
    # The page is the conversation's page: its header links and its place in the list.
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert page.get_attribute("[data-testid=export]", "href") == f"/c/{conversation_id}/export.md"
    assert (
        page.locator(f'#conversation-list [data-conversation-id="{conversation_id}"]').count() == 1
    )
    page.wait_for_function(
        "() => document.querySelector('#chat-title').textContent === 'First message'"
    )
