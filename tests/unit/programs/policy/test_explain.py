"""The explain trace: one row per registered tool, the first layer that rejected it, and why."""

from __future__ import annotations

import json

from openprogram.programs import registry
from openprogram.programs.deferred import install_loaded_deferred, reset_loaded_deferred
from openprogram.programs.policy import resolve_tools


def test_every_registered_tool_gets_exactly_one_row_in_registry_order(add_tool, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)
    add_tool("read")
    add_tool("helper", expose=False)
    add_tool("write", unsafe_in=frozenset({"plan"}))
    add_tool("paid", requires_env=("OPENPROGRAM_TEST_KEY",))
    add_tool("bash")
    add_tool("mcp__gh__issue", defer=True, source="mcp", server="gh")
    resolution = resolve_tools(source="plan", only_available=True, disabled={"bash"})
    rows = {row["name"]: row for row in resolution.explain()}
    assert list(rows) == [tool.name for tool in registry.all_tools()]
    assert {name: row["summary"] for name, row in rows.items()} == {
        "tool_search": "offered",
        "read": "offered",
        "helper": "L2: not exposed (expose=False)",
        "write": "L3: unsafe_in plan",
        "paid": "L4: requires_env OPENPROGRAM_TEST_KEY is not set",
        "bash": "L5: globally disabled",
        "mcp__gh__issue": "offered (deferred)",
    }


def test_a_row_is_plain_json_with_every_field(add_tool):
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    row = resolve_tools(deny=["mcp__gh__issue"]).explain()[-1]
    assert json.loads(json.dumps(row)) == {
        "name": "mcp__gh__issue",
        "offered": False,
        "layer": "L5",
        "reason": "in the deny list",
        "deferred": True,
        "source": "mcp",
        "loaded": False,
        "summary": "L5: in the deny list",
    }


def test_an_offered_row_has_no_layer_and_an_empty_reason(add_tool):
    add_tool("read")
    row = resolve_tools().decision("read")
    assert (row.offered, row.layer, row.reason) == (True, None, "")


def test_the_trace_marks_deferred_tools_already_loaded_this_turn(add_tool):
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    add_tool("mcp__gh__pr", defer=True, source="mcp")
    token = install_loaded_deferred(loaded=["mcp__gh__issue"])
    try:
        resolution = resolve_tools()
    finally:
        reset_loaded_deferred(token)
    assert resolution.decision("mcp__gh__issue").loaded is True
    assert resolution.decision("mcp__gh__pr").loaded is False


def test_tool_search_is_offered_only_alongside_a_deferred_tool(add_tool):
    add_tool("read")
    without = resolve_tools()
    assert without.names == ["read"]
    assert without.decision("tool_search").summary == "L6: no deferred tools are offered"
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    assert resolve_tools().names == ["tool_search", "read", "mcp__gh__issue"]


def test_tool_search_follows_deferred_tools_through_selection_layers(add_tool):
    add_tool("read")
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    resolution = resolve_tools(toolset=["mcp__gh__issue"], allow=["mcp__gh__issue"])
    assert resolution.names == ["tool_search", "mcp__gh__issue"]
    assert resolve_tools(toolset=["read"]).decision("tool_search").layer == "L6"


def test_deny_and_global_disable_veto_tool_search_itself(add_tool):
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    assert resolve_tools(deny=["tool_search"]).decision("tool_search").summary == (
        "L5: in the deny list"
    )
    assert "tool_search" not in resolve_tools(disabled={"tool_search"}).names


def test_tool_search_still_serves_after_the_registry_is_reset(add_tool):
    registry.reset_registry()
    add_tool("mcp__gh__issue", defer=True, source="mcp")
    resolution = resolve_tools()
    assert resolution.names == ["mcp__gh__issue", "tool_search"]
    assert resolution.decision("tool_search").offered is True
    without = resolve_tools(deny=["mcp__gh__issue"])
    assert without.decision("tool_search").summary == "L6: no deferred tools are offered"


def test_the_trace_is_computed_from_the_same_call_not_a_second_policy(add_tool):
    for name in ("read", "write", "bash"):
        add_tool(name)
    resolution = resolve_tools(toolset=["read", "write"], deny=["write"])
    offered = [row.name for row in resolution.decisions if row.offered]
    assert offered == resolution.names == ["read"]


def test_the_explain_dicts_match_the_decision_rows_for_every_layer(add_tool, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)
    add_tool("read")
    add_tool("helper", expose=False)
    add_tool("write", unsafe_in=frozenset({"plan"}))
    add_tool("paid", requires_env=("OPENPROGRAM_TEST_KEY",))
    add_tool("mcp__gh__issue", defer=True, source="mcp", server="gh")
    resolution = resolve_tools(source="plan", only_available=True, deny=["read"])
    explained = resolution.explain()
    assert explained == [row.to_dict() for row in resolution.decisions]
    assert [row["summary"] for row in explained] == [
        "offered",
        "L5: in the deny list",
        "L2: not exposed (expose=False)",
        "L3: unsafe_in plan",
        "L4: requires_env OPENPROGRAM_TEST_KEY is not set",
        "offered (deferred)",
    ]
