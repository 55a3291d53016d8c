"""Nested tool cards in Chromium: an Agent tool's own tool call renders inside its card.

The server loads ``tests.e2e.nested_pkg``, whose ``relay`` Agent tool runs a nested
offline turn that calls ``shout_word``; the chat must show that call's card inside the
relay's card, live and again after a reload (rebuilt from run history).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import login, open_new_conversation
from tests.servers import make_server

pytestmark = pytest.mark.e2e

_OUTER = '.tool-card:has(> summary .tool-name:text-is("relay"))'
_INNER = f'{_OUTER} > .tool-body > .children > .tool-card:has(> summary .tool-name:text-is("shout_word"))'


@pytest.fixture(scope="module")
def nested_server(tmp_path_factory):
    srv = make_server(
        tmp_path_factory.mktemp("nested-home"), OPENPROGRAM_PACKAGES="tests.e2e.nested_pkg"
    )
    srv.create_users()
    srv.start()
    yield srv
    srv.stop()


def _assert_nested(page) -> None:
    inner = page.locator(_INNER)
    # Server-rendered cards start collapsed: attached, not necessarily visible.
    inner.wait_for(state="attached")
    assert inner.count() == 1
    assert inner.get_attribute("data-status") == "done"
    assert "OTTERS!" in inner.locator(".tool-result").text_content()
    # Exactly one shout_word card on the page: it is not also shown at the top level.
    assert page.locator('.tool-card:has(> summary .tool-name:text-is("shout_word"))').count() == 1
    outer = page.locator(_OUTER)
    assert outer.get_attribute("data-status") == "done"
    assert "shout_word: ok" in outer.locator(":scope > .tool-body > .tool-result").text_content()
    # The run's compact explain trace still says why a tool was not offered.
    not_offered = page.locator(".run:last-child [data-testid=not-offered]").text_content()
    assert "Not needed: no offered tool loads on demand: tool_search" in not_offered
    assert "L6 no deferred tools are offered" in not_offered  # the code, in its details


def test_a_nested_agent_call_renders_inside_the_outer_card(nested_server, page):
    login(page, nested_server, "alice")
    open_new_conversation(page, nested_server)
    page.fill("#composer-text", '/relay {"word": "otters"}')
    page.press("#composer-text", "Enter")
    page.wait_for_selector(".run:last-child[data-status=completed] .run-status", timeout=40_000)
    _assert_nested(page)
    # Reloaded, the transcript is rendered from run history and nested again in the page.
    page.reload()
    page.wait_for_selector(".run[data-status=completed] .run-status")
    _assert_nested(page)
