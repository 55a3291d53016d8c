"""Workload identity (SEP-1933): the platform's identity token, traded with the jwt-bearer grant.

Against the real OAuth-protected MCP server (tests/fakes/oauth_mcp_server.py) whose
token endpoint grants ``jwt-bearer`` for one assertion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig
from openprogram.mcp.oauth_machine import MCPMachineClient, machine_auth
from openprogram.mcp.oauth_stores import MemoryOAuthStore
from openprogram.programs import registry
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo

from .conftest import WAIT

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path, "--workload-token", "platform-token-1") as running:
        yield running


def _connect(demo: OAuthDemo, token: str, audiences: list[str]) -> tuple[dict, MemoryOAuthStore]:
    async def workload_token(audience: str) -> str:
        audiences.append(audience)
        return token

    store = MemoryOAuthStore()
    client = MCPMachineClient(client_id="svc-1", workload_token=workload_token)
    manager = MCPManager(
        backoff=Backoff(initial=30, maximum=30),
        auth_for=lambda config: machine_auth(config.url, client, store),
    )
    try:
        manager.add(MCPServerConfig(name="wl", transport="http", url=demo.url, timeout=10))
        status = manager.wait_for("wl", lambda s: s["state"] in ("ready", "failed"), timeout=WAIT)
        if status["state"] == "ready":
            tool = registry.get("mcp__wl__whoami")
            assert tool is not None
            status = {**status, "whoami": asyncio.run(tool.execute("c1", {})).content}
        return status, store
    finally:
        manager.shutdown()


def test_a_workload_connects_with_its_platform_token_minted_for_the_issuer(
    demo: OAuthDemo, clean_registry
) -> None:
    audiences: list[str] = []

    status, store = _connect(demo, "platform-token-1", audiences)

    assert status["state"] == "ready", status["error"]
    assert status["whoami"] == "account=workload:svc-1"
    assert audiences == [f"{demo.base}/as"]
    assert [e["grant_type"] for e in demo.events("token")] == [JWT_BEARER]
    assert demo.events("authorize") == [] and demo.events("register") == []
    assert store.tokens is not None


def test_a_refused_workload_token_fails_once_without_another_grant(
    demo: OAuthDemo, clean_registry
) -> None:
    status, store = _connect(demo, "stolen-token", [])

    assert status["state"] == "failed"
    assert "invalid_grant" in status["error"]
    assert [e["grant_type"] for e in demo.events("token")] == [JWT_BEARER]
    assert demo.events("authorize") == []
    assert store.tokens is None


def test_a_machine_client_takes_a_workload_token_as_its_only_credential() -> None:
    async def token(audience: str) -> str:
        return "t"

    with pytest.raises(ValueError, match="exactly one"):
        MCPMachineClient(client_id="svc", client_secret="s", workload_token=token)
    assert MCPMachineClient(client_id="svc", workload_token=token).workload_token is token
