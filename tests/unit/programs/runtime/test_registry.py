"""The one registry: register/get/unregister, snapshots, side indexes, thread safety."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs import registry


def _tool(name: str, **settings) -> AgentTool:
    return AgentTool(name=name, description=f"{name}.", **settings)


def test_register_get_and_all_tools_keep_registration_order():
    first, second = registry.register(_tool("b")), registry.register(_tool("a"))
    assert registry.get("a") is second and registry.get("missing") is None
    assert registry.all_tools() == [first, second]


def test_a_second_tool_with_the_same_name_is_refused_unless_override():
    original = registry.register(_tool("dup", toolsets=("old",)))
    with pytest.raises(registry.DuplicateToolError, match="'dup' is already registered"):
        registry.register(_tool("dup"))
    assert registry.get("dup") is original
    replacement = registry.register(_tool("dup", toolsets=("new",)), override=True)
    assert registry.get("dup") is replacement
    assert registry.toolset_members("old") == frozenset()
    assert registry.toolset_members("new") == {"dup"}


def test_unregister_removes_the_tool_from_the_side_indexes():
    registry.register(_tool("t", toolsets=("research",), unsafe_in=frozenset({"telegram"})))
    assert registry.unsafe_in_channel("telegram") == {"t"}
    registry.unregister("t")
    assert registry.get("t") is None
    assert registry.toolset_members("research") == frozenset()
    assert registry.unsafe_in_channel("telegram") == frozenset()


def test_snapshot_and_restore_bring_back_exactly_the_earlier_state():
    registry.register(_tool("kept", toolsets=("s",)))
    snapshot = registry.snapshot_registry()
    registry.register(_tool("added", toolsets=("s",)))
    registry.unregister("kept")
    registry.restore_registry(snapshot)
    assert [t.name for t in registry.all_tools()] == ["kept"]
    assert registry.toolset_members("s") == {"kept"}


def test_every_change_bumps_the_version():
    before = registry.registry_version()
    registry.register(_tool("v"))
    registry.unregister("v")
    assert registry.registry_version() == before + 2


def test_concurrent_registration_from_threads_loses_nothing():
    names = [f"tool_{i}" for i in range(400)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: registry.register(_tool(n, toolsets=("bulk",))), names))
    assert sorted(t.name for t in registry.all_tools()) == sorted(names)
    assert registry.toolset_members("bulk") == set(names)
