"""axe-core scans: chat, Programs and settings pages have no serious or critical violations.

axe-core comes from npm (``make axe-deps``: pinned with its hash in
``tests/e2e/axe/package-lock.json``, installed into ``.tools/axe``). It is evaluated
through the DevTools protocol, so the pages keep their strict Content-Security-Policy
while they are scanned. Each page is scanned at 1280x800 and at 390x844, in the light
theme and in the dark one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login, open_new_conversation
from tests.e2e.sizes import SIZES, sized_page

pytestmark = pytest.mark.e2e

AXE_JS = Path(__file__).resolve().parents[2] / ".tools/axe/node_modules/axe-core/axe.min.js"
BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE_JS.is_file():
        pytest.fail(f"axe-core is not installed at {AXE_JS}: run `make axe-deps`")
    return AXE_JS.read_text()


@pytest.fixture
def spage(browser, size):
    yield from sized_page(browser, size)


def _violations(page: Page, axe_source: str) -> list[dict]:
    """Run axe on the page as it is now; the serious and critical findings, compactly."""
    page.evaluate(axe_source)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],
        }
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]


def _assert_clean(page: Page, axe_source: str, what: str) -> None:
    found = _violations(page, axe_source)
    assert not found, f"{what} at {page.viewport_size}: {json.dumps(found, indent=1)}"


def _set_theme(page: Page, server, theme: str) -> None:
    page.goto(server.url + "/account/")
    page.check(f"[data-testid=theme-{theme}]")
    page.click("[data-testid=save-settings]")
    expect(page.locator("html")).to_have_attribute("data-theme", theme)


@pytest.mark.parametrize("theme", ["light", "dark"])
@SIZES
def test_the_pages_have_no_serious_accessibility_violations(server, spage, size, axe_source, theme):
    page = spage
    login(page, server, "root")  # staff: the settings page shows its model list too
    _set_theme(page, server, theme)
    try:
        _assert_clean(page, axe_source, f"settings ({theme})")

        page.goto(server.url + "/programs/")
        page.locator("[data-testid=catalog-tool][data-tool=web_search] button.tool-name").click()
        expect(page.locator("[data-testid=tool-detail]")).to_be_visible()
        page.locator("[data-testid=profile-panel] details").first.click()
        _assert_clean(page, axe_source, f"Programs ({theme})")
        # A profile of one's own adds remove buttons and the "add several" checkboxes.
        page.fill("[data-testid=new-profile-name]", f"a11y-{theme}-{size['width']}")
        page.click("[data-testid=create-profile]")
        page.click("[data-testid=profile-tools] li[data-tool=bash] [data-testid=remove-tool]")
        expect(page.locator("[data-testid=add-tool-list]")).to_be_visible()
        _assert_clean(page, axe_source, f"Programs, own profile ({theme})")

        page.goto(server.url + "/")
        _assert_clean(page, axe_source, f"chat landing page ({theme})")
        open_new_conversation(page, server)
        page.fill("#composer-text", "/list_dir path=.")
        page.press("#composer-text", "Enter")
        page.wait_for_selector(".run:last-child[data-status=completed]", timeout=40_000)
        _assert_clean(page, axe_source, f"chat with a finished turn ({theme})")
    finally:
        _set_theme(page, server, "system")
