"""Real MCP servers seen from the Programs page: their tools appear, failures are shown."""

from __future__ import annotations

import sys

import pytest
from django.utils.html import escape

from openprogram.mcp import get_mcp_manager
from tests.integration.mcp.conftest import DEMO_SERVER, WAIT, is_failed, is_ready
from tools_app.mcp_models import MCPServer
from tools_app.mcp_services import mcp_servers_start, mcp_servers_stop

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
