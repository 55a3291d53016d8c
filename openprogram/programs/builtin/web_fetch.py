"""The ``web_fetch`` tool: a public web page as readable text."""

from __future__ import annotations

from openprogram.agent.types import AgentToolResult
from openprogram.config import get_config
from openprogram.programs.builtin._html_text import html_to_text
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

__all__ = ["web_fetch"]


@function(toolset=["web"], label="Fetch web page")
async def web_fetch(url: str) -> ToolReturn | AgentToolResult:
    """Fetch a web page or text document over http(s) and return it as readable text.

    HTML is turned into plain text (title, headings as "#" lines, links as
    "text (url)"; scripts, styles and navigation dropped); plain text, JSON and XML come
    back as they are. Other content (images, PDFs, archives) is refused. Follows up to 5
    redirects. Only public internet addresses are fetched: localhost, private networks
    and cloud metadata addresses are refused, also when reached through DNS or a
    redirect. Bodies over 2 MB and fetches slower than 20 seconds are stopped. Use
    web_search first when you do not know the URL.

    Args:
        url: The full http:// or https:// URL to fetch.
    """
    # Here, not at the top: _http_fetch imports httpx (~0.15 s of CPU), and this module is
    # imported by every process that starts Django, nearly none of which ever fetches a page.
    from openprogram.programs.builtin._http_fetch import fetch_public

    config = get_config()
    page = await fetch_public(
        url,
        allow_hosts=config.web_fetch_allow_hosts,
        max_bytes=config.web_fetch_max_bytes,
        timeout=config.web_fetch_timeout,
    )
    body = html_to_text(page.text, base_url=page.url) if page.kind == "html" else page.text
    header = (
        f"URL: {page.url}\nStatus: {page.status} {page.reason}\nContent-Type: {page.media_type}"
    )
    text = f"{header}\n\n{body}" if body.strip() else f"{header}\n\n(the page has no text)"
    data = {"url": page.url, "status": page.status, "content_type": page.media_type}
    if page.status >= 400:
        return AgentToolResult(content=text, is_error=True, details=data)
    return ToolReturn(text, data=data)
