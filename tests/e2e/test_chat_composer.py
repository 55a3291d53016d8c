"""The chat in Chromium against the real daphne server, with the offline model.

Screenshots of the composer, a tool card and an approval prompt are taken as the tests
pass through those states, when ``OPENPROGRAM_SCREENSHOTS_DIR`` names a folder
(``make screenshots`` sets it to docs/screenshots/); a plain test run writes nothing into
the tree.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _screenshot(page, name: str) -> None:
    folder = os.environ.get("OPENPROGRAM_SCREENSHOTS_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / name))


def _api(page, method: str, path: str, data: dict | None = None) -> dict | None:
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.fetch(
        page.url.split("/c/")[0].rstrip("/") + path,
        method=method,
        headers={"X-CSRFToken": token, "Content-Type": "application/json"},
        data=data,
    )
    assert response.ok, f"{method} {path}: {response.status} {response.text()}"
    return response.json() if response.status != 204 else None


def _new_chat(page, server) -> None:
    login(page, server, "alice")
    open_new_conversation(page, server)


def _send(page, text: str) -> None:
    page.fill("#composer-text", text)
    page.press("#composer-text", "Enter")


def _last_run(page):
    return page.locator(".run").last


def _wait_run_status(page, status: str, timeout: float = 40_000) -> None:
    # Generous: the first turn of a server process imports litellm, which takes seconds.
    page.wait_for_selector(f".run:last-child[data-status={status}] .run-status", timeout=timeout)


def test_a_message_streams_a_reply_listing_the_offered_tools(server, page):
    _new_chat(page, server)
    page.fill("#composer-text", "Which tools can you use?")
    page.click("#plus-button")
    page.wait_for_selector("#plus-panel:not([hidden])")
    _screenshot(page, "composer.png")
    page.click("#plus-button")
    page.press("#composer-text", "Enter")
    _wait_run_status(page, "completed")
    reply = _last_run(page).locator(".reply").inner_text()
    assert "Tools offered this turn" in reply and "bash" in reply
    assert page.input_value("#composer-text") == ""
    # Tokens and cost under the reply, live (the offline model is free).
    usage = _last_run(page).locator("[data-testid=run-usage] summary").inner_text()
    assert usage.endswith("tokens · 0.0000 USD") and not usage.startswith("0 ")
    # The title came from the first message, in the header and the sidebar.
    assert page.text_content("#chat-title") == "Which tools can you use?"
    assert page.locator("#conversation-list a[aria-current=true]").inner_text() == (
        "Which tools can you use?"
    )
    page.reload()
    page.wait_for_selector(".run[data-status=completed] .reply.markdown p")
    assert "Tools offered" in _last_run(page).locator(".reply").inner_text()
    assert _last_run(page).locator("[data-testid=run-usage] summary").inner_text() == usage


def test_shift_enter_makes_a_new_line_instead_of_sending(server, page):
    _new_chat(page, server)
    page.click("#composer-text")
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    assert page.input_value("#composer-text") == "line one\nline two"
    assert page.locator(".run").count() == 0


def test_a_profile_without_bash_refuses_it_as_not_offered(server, page):
    _new_chat(page, server)
    name = f"nobash-{uuid.uuid4().hex[:6]}"
    _api(page, "POST", "/api/profiles", {"name": name})
    _api(page, "DELETE", f"/api/profiles/{name}/tools/bash")
    page.reload()
    page.wait_for_selector("#connection[data-state=open]")
    page.select_option("#profile-select", name)
    _send(page, "/bash echo hi")
    _wait_run_status(page, "completed")
    reply = _last_run(page).locator(".reply").inner_text()
    assert "'bash' is not offered" in reply
    assert _last_run(page).locator(".tool-card").count() == 0
    # The choice is remembered by the conversation.
    page.reload()
    assert page.input_value("#profile-select") == name


def test_an_approved_bash_call_streams_and_completes(server, page):
    _new_chat(page, server)
    assert page.input_value("#profile-select") == "default"
    _send(page, "/bash echo hi")
    card = page.locator(".tool-card[data-status=awaiting_approval]")
    card.wait_for()
    assert card.locator(".tool-name").inner_text() == "bash"
    assert '"command": "echo hi"' in card.locator(".tool-args").inner_text()
    card.scroll_into_view_if_needed()
    _screenshot(page, "approval.png")
    card.locator("button.approve").click()
    done = page.locator(".tool-card[data-status=done]")
    done.wait_for()
    # Streamed while it ran, then shown once: the live output gives way to the result.
    assert done.locator(".tool-output").is_hidden()
    assert done.locator(".tool-result").text_content().count("hi") == 1
    # en-US grouping: "12 ms", "1,584 ms" (a loaded machine takes over a second).
    assert re.fullmatch(r"\d{1,3}(,\d{3})* ms", done.locator(".tool-duration").inner_text())
    _wait_run_status(page, "completed")
    done.scroll_into_view_if_needed()
    _screenshot(page, "tool-card.png")


def test_a_denied_call_shows_the_reason_and_does_not_run(server, page):
    _new_chat(page, server)
    _send(page, "/bash echo should-not-run")
    card = page.locator(".tool-card[data-status=awaiting_approval]")
    card.wait_for()
    card.locator(".deny-reason").fill("not on my machine")
    card.locator("button.deny").click()
    _wait_run_status(page, "completed")
    denied = page.locator(".tool-card").last
    assert denied.get_attribute("data-status") == "denied"
    assert "should-not-run\n" not in denied.locator(".tool-result").text_content()
    assert "not on my machine" in denied.text_content()  # in the folded card's result


def test_plan_mode_hides_write(server, page):
    _new_chat(page, server)
    page.click("#plus-button")
    page.check("#opt-plan")
    page.wait_for_selector("#option-chips >> text=plan mode")
    page.click("#plus-button")
    _send(page, "what can you do?")
    _wait_run_status(page, "completed")
    offered = _last_run(page).locator("[data-testid=offered-tools]").text_content()
    names = {n.strip() for n in offered.split(",")}
    assert "read" in names
    assert "write" not in names and "bash" not in names


def test_stop_ends_a_long_tool_promptly(server, page):
    _new_chat(page, server)
    _send(page, "/bash sleep 30")
    page.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    page.wait_for_selector(".tool-card[data-status=running]")
    page.wait_for_selector("#stop:not([hidden])")
    page.click("#stop")
    _wait_run_status(page, "stopped", timeout=20_000)  # well before the 30 s sleep ends
    assert page.locator("#stop").is_hidden()
    assert page.locator(".tool-card").last.get_attribute("data-status") == "stopped"


def test_a_reloaded_page_sees_the_running_turn_finish(server, page):
    _new_chat(page, server)
    _send(page, "/bash sleep 2; echo after-reload")
    page.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    page.wait_for_selector(".tool-card[data-status=running]")
    page.reload()
    page.wait_for_selector(".run[data-status=running]")
    _wait_run_status(page, "completed", timeout=20_000)
    assert (
        "after-reload" in page.locator(".tool-card[data-status=done] .tool-result").text_content()
    )


def test_a_second_tab_sees_the_same_stream_and_can_approve(server, page):
    _new_chat(page, server)
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#connection[data-state=open]")
    _send(page, "/bash echo twin-tabs")
    other.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    page.wait_for_selector(".tool-card[data-status=done]")
    assert "twin-tabs" in page.locator(".tool-card[data-status=done] .tool-result").text_content()
    other.wait_for_selector(".run[data-status=completed] .reply.markdown")
    assert other.locator(".run .msg.user .bubble").last.inner_text() == "/bash echo twin-tabs"
    other.close()


def test_the_todo_panel_updates_live(server, page):
    _new_chat(page, server)
    assert page.locator("#todos").is_hidden()
    _send(page, '/todo_write {"todos": [{"content": "pack bags", "status": "in_progress"}]}')
    page.wait_for_selector("#todos:not([hidden]) li[data-status=in_progress]")
    assert page.locator("#todo-list li").inner_text() == "pack bags"
    _wait_run_status(page, "completed")
    page.reload()
    assert page.locator("#todo-list li").inner_text() == "pack bags"


def test_the_favicon_is_served_to_anonymous_browsers(server, page):
    response = page.request.get(server.url + "/favicon.ico")
    # Followed from /favicon.ico to the static SVG: no 404, no login page.
    assert response.status == 200 and response.url.endswith("/static/favicon.svg")
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text().startswith("<svg")
