"""cache / cache_ttl: memo on (name, canonical arguments); errors are never cached."""

from __future__ import annotations

import pytest

from openprogram.programs import _cache
from openprogram.programs.decorator import build_function_tool


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


def _counting_tool(calls: list[dict], **settings):
    def lookup(word: str, lang: str = "en") -> str:
        """Look a word up."""
        calls.append({"word": word, "lang": lang})
        return f"{word}/{lang}/{len(calls)}"

    return build_function_tool(lookup, cache=True, **settings)


async def test_the_same_arguments_hit_the_cache_whatever_their_order():
    calls: list[dict] = []
    tool = _counting_tool(calls)
    first = await tool.execute("c1", '{"word": "cat", "lang": "fr"}')
    second = await tool.execute("c2", '{"lang": "fr", "word": "cat"}')
    defaulted = await tool.execute("c3", {"word": "cat"})
    assert first.content == second.content == "cat/fr/1"
    assert defaulted.content == "cat/en/2"
    assert len(calls) == 2


async def test_errors_are_not_cached():
    attempts: list[int] = []

    def flaky(n: int) -> str:
        """Flaky."""
        attempts.append(n)
        if len(attempts) == 1:
            raise TimeoutError("upstream slow")
        return "ok"

    tool = build_function_tool(flaky, cache=True)
    assert (await tool.execute("c1", {"n": 1})).is_error
    assert (await tool.execute("c2", {"n": 1})).content == "ok"
    assert (await tool.execute("c3", {"n": 1})).content == "ok"
    assert attempts == [1, 1]


async def test_an_entry_expires_after_its_ttl(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_cache, "time", clock)
    calls: list[dict] = []
    tool = _counting_tool(calls, cache_ttl=60)
    await tool.execute("c1", {"word": "dog"})
    clock.now += 59
    await tool.execute("c2", {"word": "dog"})
    assert len(calls) == 1
    clock.now += 1
    assert (await tool.execute("c3", {"word": "dog"})).content == "dog/en/2"


async def test_without_cache_every_call_runs():
    calls: list[dict] = []

    def lookup(word: str) -> str:
        """Look up."""
        calls.append({"word": word})
        return word

    tool = build_function_tool(lookup)
    await tool.execute("c1", {"word": "a"})
    await tool.execute("c2", {"word": "a"})
    assert len(calls) == 2


def test_the_cache_is_a_bounded_lru():
    from openprogram.agent.types import AgentToolResult

    cache = _cache.ResultCache(ttl=None, max_entries=2)
    for key in ("a", "b"):
        cache.put(("t", key), AgentToolResult(content=key))
    assert cache.get(("t", "a")) is not None  # "a" is now most recent
    cache.put(("t", "c"), AgentToolResult(content="c"))
    assert cache.get(("t", "b")) is None
    assert [cache.get(("t", k)).content for k in ("a", "c")] == ["a", "c"]
    assert len(cache) == 2


@pytest.mark.parametrize("args", [{"b": 1, "a": [2, 1]}, {"a": [2, 1], "b": 1}])
def test_canonical_arguments_do_not_depend_on_key_order(args):
    assert _cache.canonical_arguments(args) == '{"a":[2,1],"b":1}'
