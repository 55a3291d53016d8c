"""Per-tool work happens once per registry version, not once per resolution.

Speed itself is measured in ``bench/bench_resolution.py``; these tests pin the
properties that keep it fast, as counts that cannot flake under load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from openprogram.programs import _decisions, policy, registry
from openprogram.programs._resolution_index import RegistryIndex, registry_index
from openprogram.programs.policy import resolve_tools

from .conftest import EchoTool


def _register(size: int, **settings_for: dict[str, Any]) -> list[str]:
    registry.reset_registry()
    names = [f"mcp__s{i % 7}__tool_{i}" for i in range(size)]
    for i, name in enumerate(names):
        settings = settings_for.get(name, {})
        registry.register(
            EchoTool(
                name=name, description="Does a thing.", defer=i % 2 == 0, source="mcp", **settings
            )
        )
    return names


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, attribute: str) -> list[Any]:
    """Wrap ``owner.attribute`` so every call's first argument is recorded."""
    calls: list[Any] = []
    original: Callable[..., Any] = getattr(owner, attribute)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, attribute, counted)
    return calls


def _arguments(names: list[str]) -> dict[str, Any]:
    return {
        "profile": names[: len(names) * 3 // 4],
        "deny": names[::10],
        "disabled": set(names[3::20]),
        "only_available": True,
    }


def test_repeated_resolutions_reuse_one_index_until_the_registry_changes(monkeypatch):
    names = _register(1_000)
    builds = _counting(monkeypatch, RegistryIndex, "build")
    first = registry_index()
    for _ in range(3):
        resolve_tools(**_arguments(names))
    assert registry_index() is first
    assert len(builds) == 1
    registry.register(EchoTool(name="late", description="Registered later."))
    resolution = resolve_tools()
    assert len(builds) == 2
    assert "late" in resolution.names


def test_layer_four_asks_only_the_gated_tools_not_every_registered_one(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_SCALE_KEY", raising=False)
    gated = {"mcp__s1__tool_1", "mcp__s2__tool_5000", "mcp__s3__tool_9999"}
    names = _register(
        10_000, **{name: {"requires_env": ("OPENPROGRAM_SCALE_KEY",)} for name in gated}
    )
    asked = _counting(monkeypatch, policy, "unavailable_reason")
    resolution = resolve_tools(only_available=True)
    assert sorted(tool.name for tool in asked) == sorted(gated)
    assert len(resolution.tools) == len(names) - len(gated) + 1  # tool_search joins


def test_the_explain_trace_builds_each_row_once_per_registry_version(monkeypatch):
    names = _register(10_000)
    built = _counting(monkeypatch, _decisions, "_row")
    first = resolve_tools(**_arguments(names)).explain()
    assert len(built) == len(names) + 1  # every tool, and tool_search standing in
    again = resolve_tools(**_arguments(names))
    assert again.explain() == first
    # tool_search is not in this reset registry, so only its row is built again.
    assert len(built) == len(names) + 2
    registry.register(EchoTool(name="late", description="Registered later."))
    rebuilt = resolve_tools(**_arguments(names)).decisions
    assert len(built) == 2 * len(names) + 4
    assert rebuilt[-1].name == "tool_search" and rebuilt[-2].name == "late"


def test_resolutions_of_one_version_share_their_unchanged_rows():
    names = _register(100)
    first = resolve_tools(deny=names[:10]).decisions
    second = resolve_tools(deny=names[:10]).decisions
    assert all(a is b for a, b in zip(first[:-1], second[:-1], strict=True))
    other = resolve_tools(deny=names[:5]).decisions
    assert [row.offered for row in other[:10]] == [False] * 5 + [True] * 5
    assert other[20] is first[20]
