"""OAuth 2.1 against a real protected MCP server with its own authorization server.

The server (tests/fakes/oauth_mcp_server.py) issues its own tokens and logs
every OAuth request, so each test can say what the client really did.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig
from openprogram.mcp.conformance_client import follow_consent_redirect
from openprogram.mcp.oauth import MCPOAuthClient, oauth_auth
from openprogram.mcp.oauth_stores import MemoryOAuthStore
from openprogram.programs import registry
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo

from .conftest import WAIT

CLIENT = MCPOAuthClient(redirect_uri="http://127.0.0.1:8000/callback", client_name="tests")


def _settled(status: dict) -> bool:
    return status["state"] in ("ready", "failed")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path, "--auto-consent", "--account", "alice-acct") as running:
        yield running


@pytest.fixture
def oauth_manager(clean_registry) -> Iterator[tuple[MCPManager, MemoryOAuthStore]]:
    store = MemoryOAuthStore()
    manager = MCPManager(
        backoff=Backoff(initial=30, maximum=30),
        auth_for=lambda config: oauth_auth(config.url, CLIENT, store, follow_consent_redirect),
    )
    yield manager, store
    manager.shutdown()


def _call(name: str, args: dict) -> tuple[str, bool]:
    tool = registry.get(name)
    assert tool is not None, f"{name} is not registered"
    result = asyncio.run(tool.execute("call-1", args))
    return result.content, result.is_error


def test_a_protected_server_connects_after_discovery_registration_and_consent(
    demo: OAuthDemo, oauth_manager
) -> None:
    manager, store = oauth_manager
    manager.add(MCPServerConfig(name="prot", transport="http", url=demo.url, timeout=10))

    status = manager.wait_for("prot", _settled, timeout=WAIT)

    assert status["state"] == "ready", status["error"]
    assert _call("mcp__prot__whoami", {}) == ("account=alice-acct", False)
    kinds = [event["event"] for event in demo.events()]
    assert kinds[:6] == [
        "unauthorized",
        "resource_metadata",
        "server_metadata",
        "register",
        "authorize",
        "token",
    ]
    authorize = demo.events("authorize")[0]
    assert authorize["method"] == "S256"
    assert authorize["resource"] == demo.url
    assert authorize["scope"] == "tools.read"  # from the resource's scopes_supported
    assert store.tokens is not None and store.client_info is not None


def test_a_call_needing_more_scope_steps_up_with_the_union_of_scopes(
    demo: OAuthDemo, oauth_manager
) -> None:
    manager, store = oauth_manager
    manager.add(MCPServerConfig(name="prot", transport="http", url=demo.url, timeout=10))
    manager.wait_for("prot", _settled, timeout=WAIT)

    content, is_error = _call("mcp__prot__write_note", {"text": "hello"})

    assert (content, is_error) == ("noted for alice-acct: hello", False)
    assert [e["scope"] for e in demo.events("authorize")] == [
        "tools.read",
        "tools.read tools.write",
    ]
    assert store.tokens is not None and store.tokens.scope == "tools.read tools.write"


def test_an_expired_token_is_refreshed_without_asking_the_user_again(
    tmp_path: Path, oauth_manager
) -> None:
    manager, store = oauth_manager
    # 5 s: connecting and listing end before the token expires even on a loaded machine
    # (an expiry during them would add a refresh this test does not expect).
    with oauth_demo(tmp_path, "--auto-consent", "--token-seconds", "5") as demo:
        manager.add(MCPServerConfig(name="prot", transport="http", url=demo.url, timeout=10))
        assert manager.wait_for("prot", _settled, timeout=WAIT)["state"] == "ready"
        first = store.tokens
        assert first is not None
        # The token's lifetime is the condition: wait until the server considers it expired.
        time.sleep(5.1)

        content, is_error = _call("mcp__prot__whoami", {})

        assert (content, is_error) == ("account=demo-user", False)
        assert [e["grant_type"] for e in demo.events("token")] == [
            "authorization_code",
            "refresh_token",
        ]
        assert len(demo.events("authorize")) == 1
        assert store.tokens is not None and store.tokens.access_token != first.access_token


@pytest.mark.parametrize(
    ("lie", "words"),
    [
        ("issuer", "issuer"),
        ("resource", "does not match"),
        ("redirect", "redirected to another host"),
        ("insecure", "not https"),
    ],
)
def test_metadata_that_lies_is_refused_and_no_token_is_stored(
    tmp_path: Path, oauth_manager, lie: str, words: str
) -> None:
    manager, store = oauth_manager
    with oauth_demo(tmp_path, "--auto-consent", "--lie", lie) as demo:
        manager.add(MCPServerConfig(name="liar", transport="http", url=demo.url, timeout=10))

        status = manager.wait_for("liar", _settled, timeout=WAIT)

        assert status["state"] == "failed"
        assert words in status["error"]
        assert demo.events("authorize") == []
        assert demo.events("token") == []
    assert store.tokens is None
    assert registry.get("mcp__liar__whoami") is None


def test_a_pre_registered_client_skips_registration(tmp_path: Path, clean_registry) -> None:
    store = MemoryOAuthStore()
    client = MCPOAuthClient(redirect_uri="http://127.0.0.1:8000/callback", client_id="pre-1")
    manager = MCPManager(
        backoff=Backoff(initial=30, maximum=30),
        auth_for=lambda config: oauth_auth(config.url, client, store, follow_consent_redirect),
    )
    try:
        with oauth_demo(
            tmp_path, "--auto-consent", "--pre-registered", "pre-1=http://127.0.0.1:8000/callback"
        ) as demo:
            manager.add(MCPServerConfig(name="prot", transport="http", url=demo.url, timeout=10))
            status = manager.wait_for("prot", _settled, timeout=WAIT)

            assert status["state"] == "ready", status["error"]
            assert demo.events("register") == []
            assert [e["client_id"] for e in demo.events("authorize")] == ["pre-1"]
    finally:
        manager.shutdown()


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"redirect_uri": "http://example.com/cb"}, "redirect_uri must be https"),
        (
            {"redirect_uri": "https://a.test/cb", "client_metadata_url": "https://a.test/"},
            "client_metadata_url",
        ),
        ({"redirect_uri": "https://a.test/cb", "client_secret": "s"}, "needs the client_id"),
    ],
)
def test_a_client_configuration_that_cannot_work_is_refused_at_once(settings, words) -> None:
    with pytest.raises(ValueError, match=words):
        MCPOAuthClient(**settings)


def test_a_machine_client_needs_exactly_one_credential() -> None:
    from openprogram.mcp.oauth_machine import MCPMachineClient

    with pytest.raises(ValueError, match="exactly one"):
        MCPMachineClient(client_id="svc")
    with pytest.raises(ValueError, match="exactly one"):
        MCPMachineClient(client_id="svc", client_secret="s", private_key_pem="k")
    assert MCPMachineClient(client_id="svc", client_secret="s").token_endpoint_auth == (
        "client_secret_basic"
    )


def test_an_enterprise_client_names_its_authorization_server() -> None:
    from openprogram.mcp.oauth_enterprise import MCPEnterpriseClient

    with pytest.raises(ValueError, match="issuer"):
        MCPEnterpriseClient(
            client_id="c", client_secret="s", issuer="", idp_token_endpoint="x", idp_client_id="i"
        )
