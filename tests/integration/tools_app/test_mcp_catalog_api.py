"""/api/mcp/...: a real server's prompts and resources for the composer, behind a login."""

from __future__ import annotations

import sys

import pytest

from openprogram.mcp import get_mcp_manager
from tests.integration.mcp.conftest import PROTOCOL_SERVER, WAIT, is_ready
from tools_app.mcp.models import MCPServer
from tools_app.mcp.services import mcp_servers_start, mcp_servers_stop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def proto_live(clean_registry):
    MCPServer.objects.create(name="proto", command=sys.executable, args=[str(PROTOCOL_SERVER)])
    mcp_servers_start()
    get_mcp_manager().wait_for("proto", lambda s: is_ready(s) and s["prompts"], timeout=WAIT)
    yield
    mcp_servers_stop()


def _post(client, path: str, body: dict):
    return client.post(path, data=body, content_type="application/json")


def test_alice_lists_prompts_and_renders_one(proto_live, alice_client):
    listed = alice_client.get("/api/mcp/prompts").json()
    assert [(p["server"], p["name"]) for p in listed] == [("proto", "summarise")]
    assert listed[0]["arguments"] == [{"name": "topic", "description": "", "required": True}]
    rendered = _post(
        alice_client,
        "/api/mcp/prompts/render",
        {"server": "proto", "name": "summarise", "arguments": {"topic": "tides"}},
    )
    assert rendered.status_code == 200
    assert rendered.json() == {"text": "Please summarise tides in three sentences."}


def test_alice_reads_a_listed_resource(proto_live, alice_client):
    uris = {r["uri"] for r in alice_client.get("/api/mcp/resources").json()}
    assert uris == {"notes://today", "notes://logo"}
    read = _post(
        alice_client, "/api/mcp/resources/read", {"server": "proto", "uri": "notes://today"}
    )
    assert read.json() == {"text": "buy milk\ncall Bob"}


def test_bad_requests_get_clear_4xx_answers(proto_live, alice_client):
    missing = _post(
        alice_client, "/api/mcp/prompts/render", {"server": "proto", "name": "summarise"}
    )
    assert (
        missing.status_code == 422 and "needs the arguments ['topic']" in missing.json()["detail"]
    )
    unknown = _post(alice_client, "/api/mcp/prompts/render", {"server": "proto", "name": "x"})
    assert unknown.status_code == 404
    foreign = _post(
        alice_client, "/api/mcp/resources/read", {"server": "proto", "uri": "file:///etc/passwd"}
    )
    assert foreign.status_code == 404
    binary = _post(
        alice_client, "/api/mcp/resources/read", {"server": "proto", "uri": "notes://logo"}
    )
    assert binary.status_code == 422 and "binary" in binary.json()["detail"]


def test_anonymous_requests_are_refused(client):
    assert client.get("/api/mcp/prompts").status_code == 401
    assert client.get("/api/mcp/resources").status_code == 401
    response = _post(client, "/api/mcp/resources/read", {"server": "proto", "uri": "notes://today"})
    assert response.status_code in (401, 403)
