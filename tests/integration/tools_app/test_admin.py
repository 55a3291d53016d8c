"""The admin: staff only; global disable editable in the list and as bulk actions."""

from __future__ import annotations

import pytest

from tools_app import selectors
from tools_app.catalog_sync import tool_catalog_sync
from tools_app.models import AgentProfile, Tool, ToolProfile

pytestmark = pytest.mark.django_db


def test_non_staff_cannot_reach_the_tool_admin(alice_client):
    response = alice_client.get("/admin/tools_app/tool/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_the_tool_list_searches_and_filters(admin_client):
    tool_catalog_sync()
    html = admin_client.get("/admin/tools_app/tool/?q=notes").content.decode()
    assert "read_notes" in html and "web_lookup" not in html
    filtered = admin_client.get("/admin/tools_app/tool/?source__exact=mcp").content.decode()
    assert "mcp__demo__echo" in filtered and "read_notes" not in filtered


def test_bulk_disable_asks_for_a_reason_then_applies_it(admin_client, admin_user):
    tool_catalog_sync()
    pks = list(
        Tool.objects.filter(name__in=["read_notes", "write_notes"]).values_list("pk", flat=True)
    )
    form = {"action": "disable_selected", "_selected_action": pks}
    ask = admin_client.post("/admin/tools_app/tool/", form)
    assert ask.status_code == 200
    assert b"Reason" in ask.content
    done = admin_client.post("/admin/tools_app/tool/", {**form, "apply": "1", "reason": "audit"})
    assert done.status_code == 302
    assert selectors.globally_disabled_names() == {"read_notes", "write_notes"}
    assert Tool.objects.get(name="read_notes").disabled_by == admin_user
    admin_client.post(
        "/admin/tools_app/tool/", {"action": "enable_selected", "_selected_action": pks}
    )
    assert selectors.globally_disabled_names() == set()


def test_the_admin_refuses_a_reserved_profile_name(admin_client, alice):
    response = admin_client.post(
        "/admin/tools_app/toolprofile/add/",
        {"owner": alice.pk, "name": "default", "tools": '["read_notes"]'},
    )
    assert response.status_code == 200
    assert b"is reserved" in response.content
    assert not ToolProfile.objects.exists()


def test_the_admin_checks_an_agent_profiles_tools_field(admin_client, alice):
    response = admin_client.post(
        "/admin/tools_app/agentprofile/add/",
        {"owner": alice.pk, "name": "bot", "tools": '{"toolset": "nope"}'},
    )
    assert response.status_code == 200
    assert b"neither one of your tool profiles nor a preset" in response.content
    assert not AgentProfile.objects.exists()
    admin_client.post(
        "/admin/tools_app/agentprofile/add/",
        {"owner": alice.pk, "name": "bot", "tools": '{"toolset": "notes"}'},
    )
    assert AgentProfile.objects.get(name="bot").tools["enabled"] == []
