"""The chat page's layout at 1280x800 and 390x844: only the transcript scrolls, the composer
stays in view, a chat opens at its latest message, and under 768 px the sidebar is a drawer."""

from __future__ import annotations

import re

import pytest

from chat_app.models import Conversation, Message, Run
from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def _long_conversation(server, turns: int = 12) -> str:
    """A conversation of ``turns`` finished runs with long replies, made in the database."""
    ((alice,),) = server.sql("SELECT id FROM auth_user WHERE username = 'alice'")
    c = server.insert(Conversation, owner_id=alice, title="Long chat")
    for i in range(turns):
        r = server.insert(Run, conversation_id=c.pk, model="offline", status="completed")
        server.insert(Message, conversation_id=c.pk, role="user", text=f"question {i}", run_id=r.pk)
        reply = f"answer {i}\n\n" + "A line of the reply.\n\n" * 6
        server.insert(Message, conversation_id=c.pk, role="assistant", text=reply, run_id=r.pk)
    return str(c.public_id)


def _box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_only_the_transcript_scrolls_and_the_chat_opens_at_its_latest_message(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    page.goto(f"{server.url}/c/{_long_conversation(server)}/")
    page.wait_for_selector("#connection[data-state=open]")
    viewport = page.viewport_size
    # The document itself never scrolls; the transcript does.
    assert page.evaluate("document.scrollingElement.scrollHeight") <= viewport["height"]
    assert page.evaluate("document.getElementById('transcript').scrollHeight") > viewport["height"]
    composer = _box(page, "#composer")
    assert composer["y"] + composer["height"] <= viewport["height"]
    assert composer["x"] >= 0 and composer["x"] + composer["width"] <= viewport["width"]
    # Opened at the latest message: the last answer is on screen, the first is not.
    assert page.locator(".run").last.locator(".reply").is_visible()
    at_bottom = "(t => t.scrollHeight - t.scrollTop - t.clientHeight < 4)(document.getElementById('transcript'))"
    assert page.evaluate(at_bottom)
    first = _box(page, ".run >> nth=0")
    assert first["y"] + first["height"] < _box(page, "#transcript")["y"]


def test_the_landing_page_focuses_the_composer_and_creates_no_empty_conversation(
    server, sized_page
):
    page = sized_page
    login(page, server, "bob")
    before = page.locator("#conversation-list .conversation-item").count()
    page.goto(server.url + "/")
    assert page.evaluate("document.activeElement.id") == "composer-text"
    page.reload()  # visiting (twice) creates nothing
    assert page.locator("#conversation-list .conversation-item").count() == before
    page.keyboard.type(f"Which tools are offered on the {page.size}?")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/c/[0-9a-f-]{36}/$"))
    page.wait_for_selector(".run[data-status=completed] .reply.markdown")
    assert page.locator(".run .msg.user .bubble").inner_text().startswith("Which tools are offered")
    assert page.locator("#conversation-list .conversation-item").count() == before + 1
    assert page.locator("#queue").is_hidden()


def test_a_first_message_whose_chat_cannot_be_created_stays_in_the_box(server, sized_page):
    page = sized_page
    login(page, server, "bob")
    page.goto(server.url + "/")
    page.route("**/api/conversations", lambda route: route.abort())  # the network drops it
    page.keyboard.type("a first message worth keeping")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('composer-error').textContent !== ''")
    assert page.input_value("#composer-text") == "a first message worth keeping"
    assert page.url == server.url + "/"


def test_under_768px_the_sidebar_is_a_drawer(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    sidebar = page.locator("#chat-sidebar")
    toggle = page.locator("[data-testid=drawer-toggle]")
    if page.size == "desktop":
        assert sidebar.is_visible() and toggle.is_hidden()
        return
    # Phone: the messages get the width; the list is one tap away and keyboard-usable.
    assert sidebar.is_hidden()
    assert _box(page, "#transcript")["width"] >= 380
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    page.wait_for_function(
        "() => document.getElementById('chat-sidebar').getBoundingClientRect().x >= 0"
    )
    assert page.evaluate("document.activeElement.dataset.testid") == "new-chat"
    page.keyboard.press("Escape")
    page.wait_for_function(
        "() => document.getElementById('chat-sidebar').getBoundingClientRect().right <= 0"
    )
    assert page.evaluate("document.activeElement.dataset.testid") == "drawer-toggle"
    # One compact header: the site's nav is in the drawer, not a bar of its own.
    assert page.locator("header.topbar").is_hidden()
    assert _box(page, ".chat-head")["y"] == 0
    toggle.click()
    nav = page.get_by_role("navigation", name="Site")
    assert nav.get_by_role("link", name="Programs").is_visible()
    assert nav.get_by_role("link", name="alice · Account · settings").is_visible()
    page.keyboard.press("Escape")
    # A one-row composer: "+", the message, Send, side by side.
    row = [_box(page, s) for s in ("#plus-button", "#composer-text", "#send")]
    assert max(b["y"] + b["height"] for b in row) - min(b["y"] for b in row) < 60
    assert _box(page, "#composer")["height"] < 90
    assert page.locator("#model-select").is_hidden()
    # The rest folds behind "+": there, every control is on the screen with a visible label.
    page.click("#plus-button")
    for selector in ("#attach-button", "#profile-select", "#model-select", "#agent-select"):
        box = _box(page, selector)
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
    for name in ("Profile", "Model", "Agent"):
        label = page.locator(f"label.inline:text-is('{name}')")
        assert label.is_visible() and label.bounding_box()["width"] > 10, name
