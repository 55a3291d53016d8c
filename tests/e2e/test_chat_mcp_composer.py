"""MCP prompts as slash commands and resources attached to a message, in Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, open_new_conversation
from tests.e2e.test_chat_elicitation import mcp_web  # noqa: F401 - the shared fixture

pytestmark = pytest.mark.e2e


def test_alice_turns_a_servers_prompt_into_her_message(page, mcp_web):  # noqa: F811
    login(page, mcp_web, "alice")
    open_new_conversation(page, mcp_web)
    page.fill("#composer-text", "/sum")
    option = page.get_by_role("button", name="/summarise")
    option.wait_for()
    assert "proto" in option.inner_text()
    option.click()
    page.get_by_label("topic *", exact=True).fill("the tides")
    page.get_by_role("button", name="Insert prompt").click()
    expect(page.locator("#composer-text")).to_have_value(
        "Please summarise the tides in three sentences."
    )
    expect(page.locator("#slash-suggestions")).to_be_hidden()


def test_alice_attaches_a_resource_and_sends_it(page, mcp_web):  # noqa: F811
    login(page, mcp_web, "alice")
    open_new_conversation(page, mcp_web)
    page.fill("#composer-text", "What is on my list?")
    page.get_by_test_id("resource-button").click()
    page.get_by_role("button", name="today notes://today · proto").click()
    expect(page.locator("#composer-text")).to_have_value(
        "What is on my list?\n\n[Resource today <notes://today> from proto]\nbuy milk\ncall Bob\n"
    )
    # A binary resource is refused with a message; the message so far is kept.
    page.get_by_test_id("resource-button").click()
    page.get_by_role("button", name="logo notes://logo · proto").click()
    expect(page.locator("#composer-error")).to_contain_text("is binary; only text can be attached")
    expect(page.locator("#composer-text")).to_have_value(re.compile("buy milk"))
    page.press("#composer-text", "Enter")
    page.locator(".msg.user .bubble", has_text="buy milk").wait_for()
