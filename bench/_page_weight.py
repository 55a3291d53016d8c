"""What a browser downloads to show a page: every response's bytes on the wire.

Chromium reports each response body's encoded size (``Request.sizes()``), so a
server or proxy that compresses is credited and one that does not is not. The
gzip column says what compression would bring (level 6, what proxies use).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

__all__ = ["PageWeight", "Transfer", "page_weight"]


@dataclass(frozen=True)
class Transfer:
    path: str
    content_type: str
    raw_bytes: int
    wire_bytes: int
    """Body as transferred (after any Content-Encoding), plus the response headers."""
    gzip_bytes: int


@dataclass(frozen=True)
class PageWeight:
    url: str
    transfers: list[Transfer]

    @property
    def wire_bytes(self) -> int:
        return sum(t.wire_bytes for t in self.transfers)

    @property
    def raw_bytes(self) -> int:
        return sum(t.raw_bytes for t in self.transfers)

    @property
    def gzip_bytes(self) -> int:
        return sum(t.gzip_bytes for t in self.transfers)


def page_weight(page, url: str) -> PageWeight:
    """Load ``url`` with the cache off and add up everything the page fetched over HTTP."""
    origin = "/".join(url.split("/", 3)[:3])
    transfers: list[Transfer] = []

    def measure(request) -> None:  # Playwright tags its handlers: a bound builtin won't do
        # Read the body as each request finishes: Chromium may drop a finished response's
        # body later (a script's navigation, its buffer limit), so reading after goto flakes.
        response = request.response()
        if request.resource_type == "websocket" or response is None:
            return
        if response.status in (301, 302):
            return
        body = response.body()
        sizes = request.sizes()
        transfers.append(
            Transfer(
                path=response.url.removeprefix(origin),
                content_type=(response.headers.get("content-type") or "").split(";")[0],
                raw_bytes=len(body),
                wire_bytes=sizes["responseBodySize"] + sizes["responseHeadersSize"],
                gzip_bytes=len(gzip.compress(body, compresslevel=6)),
            )
        )

    # Nothing of the page before (its favicon, say, still loading on a busy machine) counts.
    page.goto("about:blank")
    page.on("requestfinished", measure)
    # A first visit: nothing from the browser's cache (Chromium only, through DevTools).
    devtools = page.context.new_cdp_session(page)
    devtools.send("Network.enable")
    devtools.send("Network.setCacheDisabled", {"cacheDisabled": True})
    page.goto(url, wait_until="networkidle")
    page.remove_listener("requestfinished", measure)
    return PageWeight(url=url, transfers=transfers)
