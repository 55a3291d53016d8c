"""The approval card's "Always allow" in Chromium against the real daphne server: the
pattern is shown and editable, the saved rule lets matching calls run without asking in
any conversation, other commands still ask, and Account lists and revokes it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _completed(page, count: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('.run[data-status=completed]').length >= n", arg=count
    )


def test_always_allow_saves_an_editable_pattern_and_account_revokes_it(server, page):
    login(page, server, "alice")
    open_new_conversation(page, server)
    _send(page, "/bash echo card-saved-one")
    pattern = page.locator(".approval input.always-pattern")
    pattern.wait_for()
    assert pattern.input_value() == "bash: echo card-saved-one"
    pattern.fill("bash: echo card-saved-*")
    page.locator(".approval button.always-allow").click()
    _completed(page, 1)
    # Another conversation: a matching command runs without a card, another one asks.
    open_new_conversation(page, server)
    _send(page, "/bash echo card-saved-two")
    _completed(page, 1)
    run = page.locator(".run").last
    assert (
        "card-saved-two" in run.locator(".tool-card[data-status=done] .tool-result").text_content()
    )
    assert run.locator(".approval").count() == 0
    _send(page, "/bash echo card-saved-two; echo more")
    page.wait_for_selector(".approval button.approve")  # a compound command still asks
    page.keyboard.press("Escape")
    _completed(page, 2)
    page.goto(f"{server.url}/account/")
    saved = page.locator('[data-testid="saved-rules"]')
    assert "bash: echo card-saved-*" in saved.inner_text()
    saved.get_by_role("button", name="Revoke bash echo card-saved-*").click()
    page.wait_for_url(f"{server.url}/account/")
    assert "card-saved" not in page.locator('[data-testid="saved-rules"]').inner_text()
