"""Layer 6 state: the loaded set per turn and the provider/held split it drives."""

from __future__ import annotations

import asyncio

from openprogram.programs.deferred import (
    install_loaded_deferred,
    loaded_deferred,
    mark_deferred_loaded,
    reset_loaded_deferred,
    split_tools_for_dispatch,
)
from openprogram.programs.policy import resolve_tools


def _names(tools):
    return [tool.name for tool in tools]


def test_deferred_tools_are_held_back_until_loaded(add_tool):
    tools = [
        add_tool("read"),
        add_tool("mcp__gh__issue", defer=True, source="mcp"),
        add_tool("mcp__gh__pr", defer=True, source="mcp"),
    ]
    token = install_loaded_deferred(tools)
    try:
        provider, held = split_tools_for_dispatch(tools)
        assert (_names(provider), _names(held)) == (["read"], ["mcp__gh__issue", "mcp__gh__pr"])
        mark_deferred_loaded(["mcp__gh__pr"])
        provider, held = split_tools_for_dispatch(tools)
        assert (_names(provider), _names(held)) == (["read", "mcp__gh__pr"], ["mcp__gh__issue"])
    finally:
        reset_loaded_deferred(token)


def test_the_defer_sidecar_survives_resolution(add_tool):
    add_tool("read")
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    tools = resolve_tools().tools
    assert [tool.name for tool in tools if tool.defer] == ["mcp__gh__issue"]
    provider, held = split_tools_for_dispatch(tools)
    assert _names(provider) == ["tool_search", "read"] and _names(held) == ["mcp__gh__issue"]


def test_a_new_turn_starts_with_nothing_loaded(add_tool):
    token = install_loaded_deferred(loaded=["mcp__gh__issue"])
    assert loaded_deferred() == {"mcp__gh__issue"}
    inner = install_loaded_deferred()
    assert loaded_deferred() == frozenset()
    reset_loaded_deferred(inner)
    assert loaded_deferred() == {"mcp__gh__issue"}
    reset_loaded_deferred(token)
    assert loaded_deferred() == frozenset()


async def test_a_load_inside_a_child_task_is_seen_by_the_loop_that_spawned_it():
    token = install_loaded_deferred()
    try:

        async def tool_body() -> None:
            mark_deferred_loaded(["mcp__gh__issue"])

        await asyncio.create_task(tool_body())
        assert loaded_deferred() == {"mcp__gh__issue"}
    finally:
        reset_loaded_deferred(token)


async def test_concurrent_turns_do_not_share_loaded_tools():
    seen: dict[str, frozenset[str]] = {}

    async def turn(name: str, gate: asyncio.Event, other: asyncio.Event) -> None:
        install_loaded_deferred()
        mark_deferred_loaded([name])
        gate.set()
        await other.wait()
        seen[name] = loaded_deferred()

    first, second = asyncio.Event(), asyncio.Event()
    await asyncio.gather(turn("a", first, second), turn("b", second, first))
    assert seen == {"a": {"a"}, "b": {"b"}}
