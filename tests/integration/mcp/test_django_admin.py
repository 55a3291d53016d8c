"""The MCP server admin: staff only, status columns, enable/disable, JSON import."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from tools_app.mcp.models import MCPServer

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:tools_app_mcpserver_changelist"
IMPORT = "admin:tools_app_mcpserver_import"

IMPORT_JSON = json.dumps(
    {
        "mcpServers": {
            "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        }
    }
)


def _server(**fields) -> MCPServer:
    defaults = {"name": "demo", "command": "python", "args": ["demo.py"]}
    defaults.update(fields)
    return MCPServer.objects.create(**defaults)


@pytest.mark.parametrize("persona", ["alice_client", "bob_client"])
@pytest.mark.parametrize("url_name", [CHANGELIST, IMPORT])
def test_non_staff_users_cannot_reach_the_mcp_admin(request, persona, url_name):
    client = request.getfixturevalue(persona)
    response = client.get(reverse(url_name))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


@pytest.mark.parametrize("persona", ["alice_client", "bob_client"])
def test_non_staff_users_cannot_import(request, persona):
    client = request.getfixturevalue(persona)
    response = client.post(reverse(IMPORT), {"servers_json": IMPORT_JSON})
    assert response.status_code == 302
    assert not MCPServer.objects.exists()


def test_the_changelist_shows_each_server_with_its_state(admin_client):
    _server(name="demo")
    _server(name="off", enabled=False)
    response = admin_client.get(reverse(CHANGELIST))
    assert response.status_code == 200
    body = response.content.decode()
    assert "demo" in body
    assert "off" in body
    assert "stopped" in body
    assert reverse(IMPORT) in body


def test_the_import_view_creates_servers_from_mcp_servers_json(admin_client):
    response = admin_client.post(reverse(IMPORT), {"servers_json": IMPORT_JSON})
    assert response.status_code == 302
    time_server = MCPServer.objects.get(name="time")
    assert (time_server.transport, time_server.command) == ("stdio", "mcp-server-time")
    assert time_server.args == ["--local-timezone", "UTC"]
    remote = MCPServer.objects.get(name="remote")
    assert (remote.transport, remote.url, remote.headers) == (
        "http",
        "http://127.0.0.1:9/mcp",
        {"X-Key": "k"},
    )


def test_a_bad_import_shows_the_error_and_saves_nothing(admin_client):
    bad = json.dumps({"mcpServers": {"good": {"command": "x"}, "Bad Name": {"command": "y"}}})
    response = admin_client.post(reverse(IMPORT), {"servers_json": bad})
    assert response.status_code == 200
    assert "&#x27;Bad Name&#x27;" in response.content.decode()
    assert not MCPServer.objects.exists()


def test_import_updates_a_server_of_the_same_name_keeping_its_approvals(admin_client):
    _server(name="time", command="old", approved_fingerprints={"get_current_time": "a" * 64})
    admin_client.post(reverse(IMPORT), {"servers_json": IMPORT_JSON})
    updated = MCPServer.objects.get(name="time")
    assert updated.command == "mcp-server-time"
    assert updated.approved_fingerprints == {"get_current_time": "a" * 64}


def test_enable_and_disable_actions_flip_the_flag(admin_client):
    one = _server(name="one")
    two = _server(name="two")
    admin_client.post(
        reverse(CHANGELIST),
        {"action": "disable_servers", "_selected_action": [one.pk, two.pk]},
    )
    assert list(MCPServer.objects.values_list("enabled", flat=True)) == [False, False]
    admin_client.post(
        reverse(CHANGELIST), {"action": "enable_servers", "_selected_action": [one.pk]}
    )
    one.refresh_from_db()
    two.refresh_from_db()
    assert (one.enabled, two.enabled) == (True, False)


def test_the_add_form_rejects_an_invalid_configuration(admin_client):
    response = admin_client.post(
        reverse("admin:tools_app_mcpserver_add"),
        {
            "name": "Not Valid",
            "transport": "stdio",
            "command": "x",
            "args": "[]",
            "env": "{}",
            "url": "",
            "headers": "{}",
            "allow_tools": "[]",
            "deny_tools": "[]",
            "timeout_seconds": "10",
        },
    )
    assert response.status_code == 200
    assert not MCPServer.objects.exists()
    response = admin_client.post(
        reverse("admin:tools_app_mcpserver_add"),
        {
            "name": "web",
            "transport": "http",
            "command": "",
            "args": "[]",
            "env": "{}",
            "url": "",
            "headers": "{}",
            "allow_tools": "[]",
            "deny_tools": "[]",
            "timeout_seconds": "10",
        },
    )
    assert response.status_code == 200
    assert "An HTTP server needs a URL." in response.content.decode()
    assert not MCPServer.objects.exists()


def test_the_change_form_shows_the_live_status(admin_client):
    server = _server(name="demo")
    response = admin_client.get(reverse("admin:tools_app_mcpserver_change", args=[server.pk]))
    assert response.status_code == 200
    assert "live status" in response.content.decode().lower()


def test_an_unconfined_stdio_server_is_flagged_in_the_admin(admin_client):
    fields = {
        "transport": "stdio",
        "command": "no-such-mcp-server",
        "args": "[]",
        "env": "{}",
        "url": "",
        "headers": "{}",
        "allow_tools": "[]",
        "deny_tools": "[]",
        "timeout_seconds": "10",
    }
    add = reverse("admin:tools_app_mcpserver_add")
    form = admin_client.get(add).content.decode()
    checkbox = re.search(r'<input type="checkbox" name="confined"[^>]*>', form)
    assert checkbox and "checked" in checkbox.group(0)  # confined unless the admin unticks it
    response = admin_client.post(add, {**fields, "name": "boxed", "confined": "on"}, follow=True)
    assert "is not confined" not in response.content.decode()
    response = admin_client.post(add, {**fields, "name": "open"}, follow=True)
    assert "MCP server &#x27;open&#x27; is not confined" in response.content.decode()
    assert MCPServer.objects.get(name="boxed").confined is True
    assert MCPServer.objects.get(name="open").confined is False
    listing = admin_client.get(reverse(CHANGELIST)).content.decode()
    assert listing.count("UNCONFINED") == 1


def test_the_import_carries_the_confinement_switches(admin_client):
    servers = {"mcpServers": {"net": {"command": "srv", "network": True, "confined": True}}}
    admin_client.post(reverse(IMPORT), {"servers_json": json.dumps(servers)})
    server = MCPServer.objects.get(name="net")
    assert (server.confined, server.network) == (True, True)
