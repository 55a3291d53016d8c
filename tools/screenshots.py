"""Refresh docs/screenshots: chat, Programs and settings at 1280x800 and 390x844.

``python -m tools.screenshots`` (or ``make screenshots``) starts a private daphne
server with its own data directory, signs in a demo user, runs two chat turns
against the offline model (a message in Markdown, then a tool call that folds to one
line), and saves full-window PNGs taken by Debian's Chromium through Playwright:

    docs/screenshots/{chat,programs,settings}-{1280,390}.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
SIZES = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}


def _shoot(browser, server, label: str, size: dict[str, int]) -> list[Path]:
    from tests.e2e.conftest import login, open_new_conversation

    phone = size["width"] < 500
    context = browser.new_context(viewport=size, is_mobile=phone, has_touch=phone)
    context.set_default_timeout(30_000)
    page = context.new_page()
    saved: list[Path] = []

    def save(name: str) -> None:
        path = OUT / f"{name}-{label}.png"
        page.screenshot(path=str(path))
        saved.append(path)

    try:
        login(page, server, "alice")
        open_new_conversation(page, server)
        # A message in Markdown, then a tool call that finishes and folds to one line.
        for text in ("What is in my **workspace**?\nStart with `list_dir`.", "/list_dir path=."):
            page.fill("#composer-text", text)
            page.press("#composer-text", "Enter")
            page.wait_for_selector(".run:last-child[data-status=completed]", timeout=60_000)
            page.wait_for_selector(".run:last-child .msg.user:not([data-pending])")
        page.fill("#composer-text", "What can you do with the files in my workspace?")
        save("chat")

        page.goto(server.url + "/programs/")
        page.locator("[data-testid=catalog-tool][data-tool=web_search] button.tool-name").click()
        page.wait_for_selector("[data-testid=tool-detail]")
        # Clicking a tool scrolls to its details; show the profile and its cost instead.
        if phone:
            page.locator("[data-testid=profile-panel]").evaluate("el => el.scrollIntoView()")
        else:
            page.evaluate("window.scrollTo(0, 0)")
        save("programs")

        page.goto(server.url + "/account/")
        save("settings")
    finally:
        context.close()
    return saved


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS
    from tests.servers import make_server

    OUT.mkdir(parents=True, exist_ok=True)
    server = make_server(Path(tempfile.mkdtemp(prefix="op-screenshots-")))
    server.create_users()
    server.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for label, size in SIZES.items():
                for path in _shoot(browser, server, label, size):
                    print(path.relative_to(ROOT))
            browser.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
