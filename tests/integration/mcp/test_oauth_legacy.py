"""Which issuer an OAuth server's metadata may name, on the 2025-03-26 path and on RFC 9728's.

A real protected MCP server with its own authorization server
(tests/fakes/oauth_mcp_server.py). With ``--legacy`` it is a 2025-03-26 server: no
protected-resource metadata, its authorization server's metadata at the origin's
root. The refusals are meaningful: the "other origin" in these tests is the same
server reached as ``localhost``, so a client that accepted the metadata would
connect.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig
from openprogram.mcp.conformance_client import follow_consent_redirect
from openprogram.mcp.oauth import MCPOAuthClient, oauth_auth
from openprogram.mcp.oauth_stores import MemoryOAuthStore
from openprogram.programs import registry
from tests.fakes.oauth_launch import oauth_demo

from .conftest import WAIT

CLIENT = MCPOAuthClient(redirect_uri="http://127.0.0.1:8000/callback", client_name="tests")


def _settled(status: dict) -> bool:
    return status["state"] in ("ready", "failed")


@pytest.fixture
def oauth_manager(clean_registry) -> Iterator[tuple[MCPManager, MemoryOAuthStore]]:
    store = MemoryOAuthStore()
    manager = MCPManager(
        backoff=Backoff(initial=30, maximum=30),
        auth_for=lambda config: oauth_auth(config.url, CLIENT, store, follow_consent_redirect),
    )
    yield manager, store
    manager.shutdown()


@pytest.mark.parametrize("issuer", ["origin", "path"])
def test_a_2025_03_26_server_naming_its_own_origin_or_a_path_under_it_connects(
    tmp_path: Path, oauth_manager, issuer: str
) -> None:
    manager, store = oauth_manager
    with oauth_demo(tmp_path, "--auto-consent", "--legacy", issuer) as demo:
        manager.add(MCPServerConfig(name="old", transport="http", url=demo.url, timeout=10))

        status = manager.wait_for("old", _settled, timeout=WAIT)

        assert status["state"] == "ready", status["error"]
        kinds = [event["event"] for event in demo.events()]
        # The metadata is read once (the client decides on the issuer from that one
        # answer), and the advertised endpoints are the ones used.
        assert kinds[:5] == ["unauthorized", "server_metadata", "register", "authorize", "token"]
        assert kinds.count("server_metadata") == 1
    assert store.tokens is not None


@pytest.mark.parametrize(
    ("legacy", "words"),
    [
        ("other-origin", "issuer mismatch"),
        ("foreign-endpoint", "token_endpoint http://localhost"),
    ],
)
def test_a_2025_03_26_server_naming_another_origin_is_refused_and_no_token_is_stored(
    tmp_path: Path, oauth_manager, legacy: str, words: str
) -> None:
    manager, store = oauth_manager
    with oauth_demo(tmp_path, "--auto-consent", "--legacy", legacy) as demo:
        manager.add(MCPServerConfig(name="old", transport="http", url=demo.url, timeout=10))

        status = manager.wait_for("old", _settled, timeout=WAIT)

        assert status["state"] == "failed"
        assert "issuer mismatch" in status["error"]
        assert words in status["error"]
        assert demo.events("register") == []
        assert demo.events("authorize") == []
        assert demo.events("token") == []
    assert store.tokens is None
    assert registry.get("mcp__old__whoami") is None


def test_on_the_rfc9728_path_even_a_same_origin_issuer_must_match_exactly(
    tmp_path: Path, oauth_manager
) -> None:
    manager, store = oauth_manager
    with oauth_demo(tmp_path, "--auto-consent", "--lie", "same-origin-issuer") as demo:
        manager.add(MCPServerConfig(name="prm", transport="http", url=demo.url, timeout=10))

        status = manager.wait_for("prm", _settled, timeout=WAIT)

        assert status["state"] == "failed"
        assert "issuer mismatch" in status["error"]
        assert demo.events("resource_metadata") != []
        assert demo.events("authorize") == []
        assert demo.events("token") == []
    assert store.tokens is None
