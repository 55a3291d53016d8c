"""The ``web_search`` tool: titles, URLs and snippets from a configured search backend.

Backends, first configured wins:

* SearXNG (``Config.searxng_url``, e.g. ``http://searxng:8080``): ``GET /search?q=…&format=json``
  (the instance must have the JSON format enabled in its ``settings.yml``);
* Brave Search API (``Config.search_api_key`` or the ``BRAVE_API_KEY`` environment
  variable): ``GET https://api.search.brave.com/res/v1/web/search``.

With neither, layer 4 (``check_fn``) hides the tool, so the model never sees a search
it cannot run, and the Programs page shows :data:`NO_BACKEND_REASON` as the reason. The backend URL is the operator's own setting, so it is trusted (a
SearXNG on the local network is the common case) and not put through the public-address
guard that protects ``web_fetch``.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from openprogram.config import get_config
from openprogram.programs._availability import ToolUnavailable
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

__all__ = [
    "BRAVE_ENDPOINT",
    "NO_BACKEND_REASON",
    "SearchFailed",
    "SearchHit",
    "search_backend",
    "web_search",
]

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
NO_BACKEND_REASON = "no web search backend: set SEARXNG_URL or BRAVE_API_KEY"
_TIMEOUT_S = 15.0
_TAGS = re.compile(r"<[^>]+>")
Backend = Literal["searxng", "brave"]


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


class SearchFailed(Exception):
    """The search backend could not answer; the message names it and why."""


def _brave_key() -> str:
    return get_config().search_api_key or os.environ.get("BRAVE_API_KEY", "")


def search_backend() -> Backend | None:
    """The backend a search would use now, or None when nothing is configured."""
    if get_config().searxng_url:
        return "searxng"
    if _brave_key():
        return "brave"
    return None


def _search_configured() -> bool:
    """Layer 4 gate: a backend is configured, else the reason says how to configure one."""
    if search_backend() is None:
        raise ToolUnavailable(NO_BACKEND_REASON)
    return True


def _plain(text: Any) -> str:
    return html.unescape(_TAGS.sub("", str(text or ""))).strip()


def _hits(items: Any, snippet_key: str, limit: int) -> list[SearchHit]:
    if not isinstance(items, list):
        raise SearchFailed("the search backend answered without a result list")
    hits = [
        SearchHit(_plain(item.get("title")), str(item["url"]), _plain(item.get(snippet_key)))
        for item in items
        if isinstance(item, dict) and item.get("url")
    ]
    return hits[:limit]


async def _get_json(url: str, *, params: dict[str, Any], headers: dict[str, str]) -> Any:
    # Here, not at the top: httpx costs ~0.15 s of CPU to import, and this module is imported
    # by every process that starts Django, nearly none of which ever runs a search.
    import httpx

    from openprogram.programs.builtin._http_fetch import tls_context

    async with httpx.AsyncClient(
        timeout=_TIMEOUT_S, trust_env=False, verify=tls_context()
    ) as client:
        try:
            response = await client.get(url, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise SearchFailed(f"the search backend at {url!r} is unreachable: {exc}") from None
    if response.status_code != 200:
        raise SearchFailed(
            f"the search backend at {url!r} answered HTTP {response.status_code}: "
            f"{response.text[:200]!r}"
        )
    try:
        return response.json()
    except ValueError:
        raise SearchFailed(f"the search backend at {url!r} did not answer JSON") from None


async def _search(query: str, limit: int) -> tuple[Backend, list[SearchHit]]:
    config = get_config()
    if config.searxng_url:
        payload = await _get_json(
            config.searxng_url.rstrip("/") + "/search",
            params={"q": query, "format": "json"},
            headers={"Accept": "application/json"},
        )
        results = payload.get("results") if isinstance(payload, dict) else None
        return "searxng", _hits(results, "content", limit)
    key = _brave_key()
    if not key:
        raise SearchFailed(NO_BACKEND_REASON)
    payload = await _get_json(
        BRAVE_ENDPOINT,
        params={"q": query, "count": limit},
        headers={"Accept": "application/json", "X-Subscription-Token": key},
    )
    web = payload.get("web") if isinstance(payload, dict) else None
    return "brave", _hits(web.get("results") if isinstance(web, dict) else [], "description", limit)


def _render(number: int, hit: SearchHit) -> str:
    snippet = f"\n   {hit.snippet}" if hit.snippet else ""
    return f"{number}. {hit.title or hit.url}\n   {hit.url}{snippet}"


@function(toolset=["web"], check_fn=_search_configured, label="Search the web")
async def web_search(
    query: str,
    max_results: Annotated[int, Field(ge=1, le=20)] = 8,
) -> ToolReturn:
    """Search the web and return a numbered list of results: title, URL and snippet.

    Use short, specific queries (the words you expect on the page you want; add a site
    or a year to narrow it). Snippets are short extracts, often not enough to answer from:
    fetch the most promising URLs with web_fetch to read them. At most `max_results`
    results (default 8, up to 20).

    Args:
        query: What to search for.
        max_results: How many results to return.
    """
    if not query.strip():
        raise ValueError("query is empty; say what to search for")
    backend, hits = await _search(query.strip(), max_results)
    if not hits:
        text = f"No results for {query!r}."
    else:
        text = "\n\n".join(_render(number, hit) for number, hit in enumerate(hits, start=1))
    return ToolReturn(
        text,
        data={"backend": backend, "results": [hit.__dict__ for hit in hits]},
    )
