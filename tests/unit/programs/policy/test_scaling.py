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
from openprogram.programs.deferred import install_loaded_deferred, reset_loaded_deferred
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


def test_a_repeated_resolution_reuses_its_trace_instead_of_rebuilding_rows(monkeypatch):
    names = _register(10_000)
    built = _counting(monkeypatch, _decisions.TraceCache, "_build")
    first = resolve_tools(**_arguments(names)).explain()
    assert len(built) == 1 and len(first) == len(names) + 1  # tool_search stands in
    again = resolve_tools(**_arguments(names))
    assert again.explain() == first
    assert again.decisions == [tuple(row.values())[:-1] for row in first]
    assert len(built) == 1
    registry.register(EchoTool(name="late", description="Registered later."))
    rebuilt = resolve_tools(**_arguments(names)).decisions
    assert len(built) == 2
    assert [row.name for row in rebuilt[-2:]] == ["late", "tool_search"]


def test_a_different_outcome_gets_its_own_trace_built_from_the_unchanged_rows():
    names = _register(100)
    denied_ten = resolve_tools(deny=names[:10])
    same = resolve_tools(deny=names[:10])
    assert all(a is b for a, b in zip(denied_ten.decisions, same.decisions, strict=True))
    denied_five = resolve_tools(deny=names[:5]).decisions
    assert [row.offered for row in denied_five[:10]] == [False] * 5 + [True] * 5
    assert [row.offered for row in denied_ten.decisions[:10]] == [False] * 10
    # Rows whose verdict did not change are shared, not rebuilt.
    assert denied_five[20] is denied_ten.decisions[20]
    assert denied_five[0] is denied_ten.decisions[0]


def test_a_changed_layer_four_verdict_is_not_served_from_an_old_trace(monkeypatch):
    names = _register(20, mcp__s1__tool_1={"requires_env": ("OPENPROGRAM_SCALE_KEY",)})
    monkeypatch.delenv("OPENPROGRAM_SCALE_KEY", raising=False)
    hidden = resolve_tools(only_available=True).decision(names[1])
    monkeypatch.setenv("OPENPROGRAM_SCALE_KEY", "set")
    shown = resolve_tools(only_available=True).decision(names[1])
    assert (hidden.layer, shown.offered) == ("L4", True)


def test_an_explain_row_changed_by_its_caller_does_not_leak_into_the_next_trace():
    names = _register(10)
    first = resolve_tools(deny=names[:1]).explain()
    first[0]["reason"] = "tampered"
    first[0].clear()
    assert resolve_tools(deny=names[:1]).explain()[0]["reason"] == "in the deny list"


def test_loading_a_deferred_tool_is_not_served_from_the_trace_before_it():
    names = _register(10)
    assert resolve_tools().decision(names[0]).loaded is False
    token = install_loaded_deferred(loaded=[names[0]])
    try:
        assert resolve_tools().decision(names[0]).loaded is True
    finally:
        reset_loaded_deferred(token)
