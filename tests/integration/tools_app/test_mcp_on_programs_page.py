"""Real MCP servers seen from the Programs page: their tools appear, failures are shown."""

from __future__ import annotations

import sys

import pytest
from django.utils.html import escape

from openprogram.mcp import get_mcp_manager
from tests.integration.mcp.conftest import DEMO_SERVER, WAIT, is_failed, is_ready
from tools_app.mcp.models import MCPServer
from tools_app.mcp.services import mcp_servers_start, mcp_servers_stop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live_mcp():
    yield
    mcp_servers_stop()


def test_a_connected_servers_tools_join_the_catalog_deferred(live_mcp, alice_client):
    MCPServer.objects.create(name="pdemo", command=sys.executable, args=[str(DEMO_SERVER)])
    assert "mcp__pdemo__echo" not in [t["name"] for t in alice_client.get("/api/tools").json()]
    mcp_servers_start()
    get_mcp_manager().wait_for("pdemo", is_ready, timeout=WAIT)
    tools = {t["name"]: t for t in alice_client.get("/api/tools?source=mcp").json()}
    assert tools["mcp__pdemo__echo"]["deferred"] is True
    assert tools["mcp__pdemo__echo"]["server"] == "pdemo"
    resolved = alice_client.post(
        "/api/resolve", data={"profile": "default"}, content_type="application/json"
    ).json()
    assert "mcp__pdemo__echo" in resolved["deferred"]
    assert resolved["cost"]["deferral_saved_tokens"] > 0


def test_a_failed_server_is_a_notice_on_the_programs_page(live_mcp, alice_client):
    MCPServer.objects.create(name="broken", command="/nonexistent/mcp-server-binary")
    mcp_servers_start()
    status = get_mcp_manager().wait_for("broken", is_failed, timeout=WAIT)
    html = alice_client.get("/programs/").content.decode()
    assert 'data-testid="notices"' in html
    assert "MCP server &#x27;broken&#x27; failed" in html
    assert escape(status["error"]) in html


def test_the_catalog_shows_open_world_tools_and_hides_a_server_that_is_not_exposed(
    live_mcp, alice_client
):
    from tests.integration.mcp.conftest import PROTOCOL_SERVER

    MCPServer.objects.create(name="proto", command=sys.executable, args=[str(PROTOCOL_SERVER)])
    MCPServer.objects.create(
        name="quiet", command=sys.executable, args=[str(DEMO_SERVER)], expose=False
    )
    mcp_servers_start()
    get_mcp_manager().wait_for("proto", is_ready, timeout=WAIT)
    get_mcp_manager().wait_for("quiet", is_ready, timeout=WAIT)
    html = alice_client.get("/programs/catalog/?source=mcp").content.decode()
    rows = {chunk.split('"', 1)[0]: chunk for chunk in html.split('data-tool="')[1:]}
    assert 'data-testid="badge-open-world"' in rows["mcp__proto__forecast"]
    assert 'data-testid="badge-open-world"' not in rows["mcp__proto__ask_profile"]
    # Registered (scripts and explain see it) but, like any expose=False tool, not listed.
    assert "mcp__quiet__echo" in get_mcp_manager().status("quiet")["tools"]
    assert "mcp__quiet__echo" not in rows
    api = {t["name"]: t for t in alice_client.get("/api/tools?source=mcp").json()}
    assert api["mcp__proto__forecast"]["hints"] == {
        "read_only": True,
        "destructive": False,
        "open_world": True,
    }
    detail = alice_client.get("/programs/tools/mcp__proto__forecast/").content.decode()
    assert "reads only; reaches the outside world (open world);" in detail
