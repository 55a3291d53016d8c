"""Page weight of the chat landing page ``/`` (target: under 250 KB as transferred).

A real daphne server and Chromium: the signed-in landing page, every script,
stylesheet and icon it loads, as bytes on the wire, with and without gzip.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench._page_weight import page_weight
from bench._util import print_table

TARGET_BYTES = 250 * 1024


def _kb(n: int) -> str:
    return f"{n / 1024:.1f}"


def main() -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS, login
    from tests.servers import make_server

    server = make_server(Path(tempfile.mkdtemp(prefix="bench-weight-")))
    server.create_users()
    server.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_context().new_page()
            login(page, server, "alice")
            weight = page_weight(page.context.new_page(), server.url + "/")
            browser.close()
    finally:
        server.stop()
    rows = [
        [t.path, t.content_type, _kb(t.raw_bytes), _kb(t.wire_bytes), _kb(t.gzip_bytes)]
        for t in weight.transfers
    ]
    rows.append(
        ["**total**", "", _kb(weight.raw_bytes), _kb(weight.wire_bytes), _kb(weight.gzip_bytes)]
    )
    print_table(
        f"Page weight of / (KB; target under {_kb(TARGET_BYTES)} on the wire)",
        ["response", "type", "body", "on the wire", "if gzipped"],
        rows,
    )


if __name__ == "__main__":
    main()
