"""The Tool table follows the registry: new, changed and vanished tools; disables survive."""

from __future__ import annotations

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from tools_app import selectors, services
from tools_app.catalog_sync import tool_catalog_sync, tool_catalog_sync_if_changed
from tools_app.models import Tool

pytestmark = pytest.mark.django_db


def test_it_mirrors_every_registered_tool():
    counts = tool_catalog_sync()
    assert counts["created"] == 5
    echo = Tool.objects.get(name="mcp__demo__echo")
    assert (echo.source, echo.server, echo.deferred, echo.present) == ("mcp", "demo", True, True)
    assert Tool.objects.get(name="hidden_helper").exposed is False
    assert Tool.objects.get(name="write_notes").requires_approval is True
    assert Tool.objects.get(name="read_notes").toolsets == ["notes"]


def test_it_does_nothing_when_the_registry_did_not_change():
    assert tool_catalog_sync_if_changed() is True
    assert tool_catalog_sync_if_changed() is False


def test_a_tool_registered_later_shows_up_on_the_next_read():
    assert "late_plugin_tool" not in [t.name for t in selectors.tool_list()]
    registry.register(AgentTool(name="late_plugin_tool", description="x", source="plugin"))
    assert "late_plugin_tool" in [t.name for t in selectors.tool_list()]


def test_a_vanished_tool_is_kept_as_missing_with_its_disable(alice, admin_user):
    tool_catalog_sync()
    services.profile_create(owner=alice, name="p")
    services.tool_disable(name="mcp__demo__echo", by=admin_user, reason="server flaky")
    registry.unregister("mcp__demo__echo")
    assert "mcp__demo__echo" not in [t.name for t in selectors.tool_list()]
    missing = selectors.tool_list(state="missing")
    assert [t.name for t in missing] == ["mcp__demo__echo"]
    assert missing[0].disabled
    assert selectors.profile_get(owner=alice, name="p").missing == ["mcp__demo__echo"]
    registry.register(AgentTool(name="mcp__demo__echo", description="back", source="mcp"))
    row = selectors.tool_get(name="mcp__demo__echo")
    assert (row.present, row.disabled, row.description) == (True, True, "back")


def test_a_changed_description_is_updated():
    tool_catalog_sync()
    registry.register(
        AgentTool(name="read_notes", description="Read notes, faster."), override=True
    )
    tool_catalog_sync_if_changed()
    assert Tool.objects.get(name="read_notes").description == "Read notes, faster."
