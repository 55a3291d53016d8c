"""An MCP server's form in the chat, answered in Chromium against a real daphne server."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.e2e.conftest import login, open_new_conversation
from tests.integration.mcp.conftest import PROTOCOL_SERVER, WAIT
from tests.integration.mcp.test_web_process import _admin_client
from tests.servers import make_server
from tools_app.mcp.models import MCPServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mcp_web(tmp_path_factory):
    """A daphne server of its own whose stored MCP server 'proto' is offered directly."""
    server = make_server(tmp_path_factory.mktemp("e2e-elicitation"))
    server.create_users()
    # Its tools carry no annotations (destructive, per the MCP spec): trusted here, not asked.
    config = {
        "command": sys.executable,
        "args": [str(PROTOCOL_SERVER)],
        "always_load": True,
        "destructive_without_approval": True,
    }
    server.insert(MCPServer, name="proto", **config)
    server.start()
    admin = _admin_client(server.url)
    deadline = time.monotonic() + WAIT
    while 'field-state">ready' not in admin.get("/admin/tools_app/mcpserver/").text:
        assert time.monotonic() < deadline, server.log()[-2000:]
        time.sleep(0.1)
    admin.close()
    yield server
    server.stop()


def _ask(page, server) -> None:
    login(page, server, "alice")
    open_new_conversation(page, server)
    page.fill("#composer-text", "/mcp__proto__ask_profile")
    page.press("#composer-text", "Enter")
    page.wait_for_selector(".tool-card .elicitation form", timeout=30_000)


def test_alice_answers_the_servers_form_in_the_chat(page, mcp_web):
    _ask(page, mcp_web)
    card = page.locator(".tool-card", has=page.locator(".elicitation"))
    assert card.locator(".question-text").inner_text() == "Please fill in your profile"
    assert card.locator(".tool-status").inner_text() == "waiting for your answer"
    # The schema's defaults are already filled in; the person only adds what is missing.
    assert card.get_by_label("Your name *", exact=True).input_value() == "Alice"
    assert card.get_by_label("Age", exact=True).input_value() == "30"
    assert card.get_by_label("Subscribe", exact=True).is_checked()
    assert card.get_by_label("Colour", exact=True).input_value() == "green"
    card.get_by_label("Age", exact=True).fill("41")
    card.get_by_label("E-mail *", exact=True).fill("alice@example.com")
    call_id = card.get_attribute("data-call-id")
    card.get_by_role("button", name="Submit").click()
    # The finished run is redrawn from history: find the card by its call id.
    result = page.locator(f'.tool-card[data-call-id="{call_id}"] .tool-result')
    result.wait_for(state="attached", timeout=30_000)  # in the folded card
    answer = json.loads(result.text_content())
    assert answer == {
        "action": "accept",
        "content": {
            "name": "Alice",
            "age": 41,
            "score": 95.5,
            "subscribe": True,
            "color": "green",
            "email": "alice@example.com",
        },
    }


def test_a_required_field_left_empty_keeps_the_form_open_until_alice_declines(page, mcp_web):
    _ask(page, mcp_web)
    card = page.locator(".tool-card", has=page.locator(".elicitation"))
    call_id = card.get_attribute("data-call-id")
    card.get_by_role("button", name="Submit").click()
    # The browser refuses the submit (e-mail is required): nothing was sent.
    assert card.locator("form").count() == 1
    assert card.get_by_role("button", name="Decline").is_enabled()
    card.get_by_role("button", name="Decline").click()
    card = page.locator(f'.tool-card[data-call-id="{call_id}"]')
    card.locator(".tool-result").wait_for(state="attached", timeout=30_000)
    assert json.loads(card.locator(".tool-result").text_content())["action"] == "decline"


def test_the_open_form_and_the_composers_mcp_lists_pass_axe(page, mcp_web):
    from tests.e2e.test_accessibility import AXE_JS, BLOCKING

    if not AXE_JS.is_file():
        pytest.fail(f"axe-core is not installed at {AXE_JS}: run `make axe-deps`")
    _ask(page, mcp_web)
    page.fill("#composer-text", "/")
    page.get_by_role("button", name="/summarise").wait_for()
    page.evaluate(AXE_JS.read_text())
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    found = [
        (v["id"], v["help"], [n["target"] for n in v["nodes"]][:3])
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]
    assert not found, found
