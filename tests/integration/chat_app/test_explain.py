"""The explain trace in run history: stored compactly, read back whole."""

from __future__ import annotations

import json

import pytest

from chat_app.explain import explain_compact, explain_expand
from chat_app.models import Run, RunEvent
from chat_app.selectors import run_events
from chat_app.services import conversation_create
from openprogram.programs.policy import resolve_tools

_MANY = 2_000


@pytest.fixture
def many_deferred_tools(clean_registry):
    """A large MCP-like surface: thousands of deferred tools."""
    from openprogram import function

    def remote() -> str:
        """A remote tool."""
        return "never called"

    for i in range(_MANY):
        function(name=f"mcp__big__tool_{i}", defer=True)(remote)


def _resolution(**kwargs):
    return resolve_tools(only_available=True, **kwargs)


def _by_name(rows):
    return {row["name"]: row for row in rows}


def test_compact_then_expand_gives_back_every_row(many_deferred_tools):
    denied = ["bash", "mcp__big__tool_7"]
    resolution = _resolution(deny=denied, source="plan")
    rows = resolution.explain()
    tools = [t.name for t in resolution.tools if not t.defer]
    deferred = [t.name for t in resolution.tools if t.defer]
    compact = explain_compact(rows, tools=tools, deferred=deferred)
    assert _by_name(explain_expand(compact, tools=tools, deferred=deferred)) == _by_name(rows)
    # Each reason is written once, with the names it rejected.
    rejected = {n for group in compact["not_offered"] for n in group["names"]}
    assert {"bash", "mcp__big__tool_7", "write"} <= rejected
    assert compact["counts"]["registered"] == len(rows)
    assert compact["counts"]["not_offered"] == sum(not row["offered"] for row in rows)
    assert compact["deferred_not_offered"] == ["mcp__big__tool_7"]


def test_the_compact_form_is_a_fraction_of_the_rows(many_deferred_tools):
    resolution = _resolution(deny=["mcp__big__tool_1"])
    rows = resolution.explain()
    tools = [t.name for t in resolution.tools if not t.defer]
    deferred = [t.name for t in resolution.tools if t.defer]
    compact = explain_compact(rows, tools=tools, deferred=deferred)
    assert len(rows) > _MANY
    assert len(json.dumps(compact)) * 20 < len(json.dumps(rows))


def test_compacting_twice_changes_nothing():
    rows = [
        {"name": "a", "offered": True, "layer": None, "reason": "", "deferred": False},
        {"name": "b", "offered": False, "layer": "L5", "reason": "denied", "deferred": False},
    ]
    once = explain_compact(rows, tools=["a"], deferred=[])
    assert explain_compact(once, tools=["a"], deferred=[]) is once


def test_rows_stored_by_older_runs_are_read_as_they_are():
    rows = [{"name": "a", "offered": True, "layer": None, "reason": "", "summary": "offered"}]
    assert explain_expand(rows, tools=["a"], deferred=[]) == rows


@pytest.mark.django_db(transaction=True)
def test_a_turn_stores_the_compact_trace_and_the_api_shows_it_whole(alice, alice_client):
    conversation = conversation_create(owner=alice)
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hello", "web_search_on": False},
        content_type="application/json",
    )
    assert response.status_code == 200
    run = Run.objects.get(pk=response.json()["run_id"])
    # Stored: no row per offered tool, only the rejections grouped by reason.
    assert run.explain["format"] == "compact-v1"
    stored = json.dumps(run.explain)
    assert "web_search" in stored and '"read"' not in stored and "read" in run.tools
    # The event row does not repeat what the run holds; reading the events restores it.
    event = RunEvent.objects.get(run=run, type="tools_resolved")
    assert not {"tools", "deferred", "explain"} & set(event.payload)
    relayed = next(e for e in run_events(run_id=run.pk) if e["type"] == "tools_resolved")
    assert (relayed["tools"], relayed["explain"]) == (run.tools, run.explain)
    detail = alice_client.get(f"/api/runs/{run.pk}").json()
    rows = _by_name(detail["explain"])
    web_search = rows["web_search"]
    assert web_search["offered"] is False and web_search["reason"]
    assert web_search["summary"] == f"{web_search['layer']}: {web_search['reason']}"
    assert rows["read"]["offered"] is True and rows["read"]["summary"] == "offered"
    assert set(rows) >= set(run.tools)
    assert {"layer": web_search["layer"], "reason": web_search["reason"]} in [
        {"layer": g["layer"], "reason": g["reason"]}
        for g in detail["not_offered"]
        if "web_search" in g["names"]
    ]
    # The page lists why each tool was not offered.
    page = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert 'data-testid="not-offered"' in page and "web_search" in page
