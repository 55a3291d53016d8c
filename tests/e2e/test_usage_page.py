"""The Usage page in Chromium at 1280x800 and 390x844 against the real daphne server: after
a turn of the offline model, its tables fit the window (the page never scrolls sideways)
and the cost of every row is on screen, labelled, at both sizes; the top bar takes two
rows at most, none of its items wrapped."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e


def test_the_usage_page_fits_a_phone_and_shows_the_cost(server, sized_page):
    page = sized_page
    login(page, server, "alice")
    open_new_conversation(page, server)
    page.fill("#composer-text", "count this turn")
    page.press("#composer-text", "Enter")
    page.wait_for_selector(".run[data-status=completed]")
    page.goto(server.url + "/usage/")
    width = page.viewport_size["width"]
    fits = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert fits[0] <= fits[1] == width, fits
    # The top bar: two rows on a phone (sections; theme, account, log out), none wrapped.
    assert page.locator(".topbar").bounding_box()["height"] <= 80
    for item in page.locator(".topbar .who > *").all():
        assert item.bounding_box()["height"] <= 32, item.inner_text()
    for table in ("usage-by-model", "usage-by-day"):
        costs = page.locator(f"[data-testid={table}] tbody td[data-testid=cost]")
        assert costs.count() >= 1, table
        for i in range(costs.count()):
            cost = costs.nth(i)
            assert cost.is_visible()
            box = cost.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, (table, box)
            assert cost.inner_text().strip().startswith("0.")
            # Labelled: by its column header, or on a phone by the label beside it.
            if page.size == "phone":
                label = cost.evaluate("td => getComputedStyle(td, '::before').content")
                assert label == '"Cost (USD)"'
                head = page.locator(f"[data-testid={table}] thead th").last
                assert head.inner_text() == "Cost (USD)"  # still there for screen readers
            else:
                assert page.locator(f"[data-testid={table}] thead th").last.is_visible()
