"""web_search against a real local SearXNG-shaped server (and a Brave-shaped one)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from openprogram.programs._availability import clear_availability_cache
from openprogram.programs.builtin.web_search import search_backend, web_search
from openprogram.programs.policy import resolve_tools
from tests.unit.programs.builtin._web_server import WebTestServer

# The package re-exports the tool function under the module's own name.
web_search_module = importlib.import_module("openprogram.programs.builtin.web_search")


def _searxng(handler) -> None:
    query = parse_qs(urlsplit(handler.path).query)
    if query.get("format") != ["json"]:
        handler.send_body(403, b"format not allowed", "text/plain")
        return
    results = [
        {"title": f"<b>Result</b> {n} for {query['q'][0]}", "url": f"https://example.org/{n}",
         "content": "snippet &amp; more"}
        for n in range(1, 13)
    ]  # fmt: skip
    handler.send_body(200, json.dumps({"results": results}).encode(), "application/json")


def _brave(handler) -> None:
    if handler.headers.get("X-Subscription-Token") != "brave-test-key":
        handler.send_body(401, b'{"error": "bad key"}', "application/json")
        return
    payload = {"web": {"results": [{"title": "Brave hit", "url": "https://brave.example/",
                                    "description": "from <strong>Brave</strong>"}]}}  # fmt: skip
    handler.send_body(200, json.dumps(payload).encode(), "application/json")


@pytest.fixture(scope="module")
def search_server() -> Iterator[WebTestServer]:
    server = WebTestServer()
    server.routes.update({"/search": _searxng, "/brave": _brave, "/broken/search": _broken})
    server.start()
    yield server
    server.stop()


def _broken(handler) -> None:
    handler.send_body(200, b"<html>not json</html>", "text/html")


@pytest.fixture(autouse=True)
def _no_brave_key_from_the_environment(monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    clear_availability_cache()
    yield
    clear_availability_cache()


async def test_searxng_results_come_back_as_title_url_snippet(search_server, configure, call):
    configure(searxng_url=f"http://127.0.0.1:{search_server.port}/")
    result = await call(web_search, {"query": "otters", "max_results": 3})
    assert not result.is_error
    assert result.content.startswith("1. Result 1 for otters\n   https://example.org/1\n")
    assert "snippet & more" in result.content
    assert [hit["url"] for hit in result.details["results"]] == [
        "https://example.org/1",
        "https://example.org/2",
        "https://example.org/3",
    ]
    assert result.details["backend"] == "searxng"


async def test_the_brave_backend_sends_the_key_and_parses_results(
    search_server, configure, call, monkeypatch
):
    monkeypatch.setattr(
        web_search_module, "BRAVE_ENDPOINT", f"http://127.0.0.1:{search_server.port}/brave"
    )
    configure(search_api_key="brave-test-key")
    result = await call(web_search, {"query": "otters"})
    assert result.content == "1. Brave hit\n   https://brave.example/\n   from Brave"


async def test_a_backend_error_is_a_clear_error_result(search_server, configure, call):
    configure(searxng_url=f"http://127.0.0.1:{search_server.port}/broken-root")
    result = await call(web_search, {"query": "otters"})
    assert result.is_error and "HTTP 404" in result.content


async def test_a_backend_that_does_not_answer_json_is_a_clear_error(search_server, configure, call):
    configure(searxng_url=f"http://127.0.0.1:{search_server.port}/broken")
    result = await call(web_search, {"query": "otters"})
    assert result.is_error and "did not answer JSON" in result.content


async def test_an_unreachable_backend_is_a_clear_error(configure, call):
    configure(searxng_url="http://127.0.0.1:9")
    result = await call(web_search, {"query": "otters"})
    assert result.is_error and "unreachable" in result.content


async def test_bad_arguments_are_refused(configure, call):
    configure(searxng_url="http://127.0.0.1:9")
    assert (await call(web_search, {"query": "  "})).is_error
    too_many = await call(web_search, {"query": "x", "max_results": 50})
    assert too_many.is_error and "'max_results'" in too_many.content


def test_layer_4_says_how_to_configure_a_backend_when_none_is(configure, monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    clear_availability_cache()
    decision = resolve_tools(only_available=True).decision("web_search")
    assert not decision.offered and decision.layer == "L4"
    assert decision.reason == "no web search backend: set SEARXNG_URL or BRAVE_API_KEY"
    clear_availability_cache()


def test_layer_4_hides_it_when_no_backend_is_configured(configure, monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    clear_availability_cache()
    assert search_backend() is None
    assert "web_search" not in [t.name for t in resolve_tools(only_available=True).tools]
    clear_availability_cache()
    monkeypatch.setenv("BRAVE_API_KEY", "from-env")
    assert search_backend() == "brave"
    assert "web_search" in [t.name for t in resolve_tools(only_available=True).tools]
