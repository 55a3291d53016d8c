"""Each user connects their own account: separate sessions, and tools only for the connected."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.agent.context import TurnContext, current_turn
from openprogram.mcp import Backoff, MCPServerConfig
from openprogram.mcp.accounts import MCPAccounts
from openprogram.mcp.oauth import MCPOAuthClient, MCPOAuthError, oauth_auth
from openprogram.mcp.oauth_stores import MemoryOAuthStore
from openprogram.programs import ToolUnavailable, registry
from tests.fakes.oauth_launch import OAuthDemo, consent_as, oauth_demo

from .conftest import WAIT

CLIENT = MCPOAuthClient(redirect_uri="http://127.0.0.1:8000/callback")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path) as running:
        yield running


@pytest.fixture
def accounts(clean_registry, demo: OAuthDemo) -> Iterator[MCPAccounts]:
    own = MCPAccounts(backoff=Backoff(initial=30, maximum=30))
    own.configure(MCPServerConfig(name="notes", transport="http", url=demo.url, timeout=10)).result(
        5
    )
    yield own
    own.shutdown()


def _connect(accounts: MCPAccounts, demo: OAuthDemo, user: str, account: str) -> dict:
    signer = oauth_auth(demo.url, CLIENT, MemoryOAuthStore(), consent_as(account))
    accounts.connect("notes", user, signer).result(5)
    return accounts.wait_for(
        "notes", user, lambda s: s["state"] in ("ready", "failed"), timeout=WAIT
    )


def _call_as(user: str | None, tool_name: str, args: dict) -> tuple[str, bool]:
    async def run() -> tuple[str, bool]:
        current_turn.set(TurnContext(user_id=user))
        tool = registry.get(tool_name)
        assert tool is not None
        result = await tool.execute("call-1", args)
        return result.content, result.is_error

    return asyncio.run(run())


def test_nothing_is_offered_before_anyone_connects(accounts: MCPAccounts) -> None:
    assert registry.get("mcp__notes__whoami") is None
    assert accounts.status("notes", "alice")["state"] == "stopped"
    assert "connect your account" in (accounts.unavailable_reason("notes", "alice") or "")


def test_alice_uses_her_own_account_and_bob_is_told_to_connect_his(
    accounts: MCPAccounts, demo: OAuthDemo
) -> None:
    assert _connect(accounts, demo, "alice", "alice-acct")["state"] == "ready"
    tool = registry.get("mcp__notes__whoami")
    assert tool is not None and tool.can_use is not None

    assert tool.can_use(user_id="alice") is True
    with pytest.raises(ToolUnavailable, match="connect your account for 'notes'"):
        tool.can_use(user_id="bob")
    assert _call_as("alice", "mcp__notes__whoami", {}) == ("account=alice-acct", False)
    content, is_error = _call_as("bob", "mcp__notes__whoami", {})
    assert is_error and "connect your account" in content
    content, is_error = _call_as(None, "mcp__notes__whoami", {})
    assert is_error and "connect your account" in content


def test_two_users_each_reach_the_server_as_themselves(
    accounts: MCPAccounts, demo: OAuthDemo
) -> None:
    _connect(accounts, demo, "alice", "alice-acct")
    _connect(accounts, demo, "bob", "bob-acct")

    assert _call_as("alice", "mcp__notes__whoami", {}) == ("account=alice-acct", False)
    assert _call_as("bob", "mcp__notes__whoami", {}) == ("account=bob-acct", False)


def test_after_disconnect_the_tools_are_withheld_from_that_user_only(
    accounts: MCPAccounts, demo: OAuthDemo
) -> None:
    _connect(accounts, demo, "alice", "alice-acct")
    _connect(accounts, demo, "bob", "bob-acct")

    accounts.disconnect("notes", "alice").result(WAIT)

    tool = registry.get("mcp__notes__whoami")
    assert tool is not None
    with pytest.raises(ToolUnavailable, match="connect your account"):
        tool.can_use(user_id="alice")
    assert tool.can_use(user_id="bob") is True


def test_a_refused_consent_leaves_the_user_unconnected_with_the_reason(
    accounts: MCPAccounts, demo: OAuthDemo
) -> None:
    signer = oauth_auth(demo.url, CLIENT, MemoryOAuthStore(), consent_as("x", allow=False))
    accounts.connect("notes", "alice", signer).result(5)

    status = accounts.wait_for("notes", "alice", lambda s: s["state"] == "failed", timeout=WAIT)

    assert "access_denied" in status["error"]
    assert "connect your account again" in (accounts.unavailable_reason("notes", "alice") or "")
    assert demo.events("token") == []


def test_a_step_up_nobody_can_grant_fails_that_call_only_and_says_what_to_do(
    accounts: MCPAccounts, demo: OAuthDemo
) -> None:
    first = consent_as("alice-acct")
    consents: list[str] = []

    async def once_then_nobody(url: str):  # type: ignore[no-untyped-def]
        # The web app's flow: the browser is there for Connect, nobody is for a chat call.
        if consents:
            raise MCPOAuthError("the server needs your consent again: connect your account again")
        consents.append(url)
        return await first(url)

    signer = oauth_auth(demo.url, CLIENT, MemoryOAuthStore(), once_then_nobody)
    accounts.connect("notes", "alice", signer).result(5)
    accounts.wait_for("notes", "alice", lambda s: s["state"] == "ready", timeout=WAIT)

    content, is_error = _call_as("alice", "mcp__notes__write_note", {"text": "x"})

    assert is_error
    assert "needs more access for 'write_note'" in content
    assert "connect your account again" in content
    assert _call_as("alice", "mcp__notes__whoami", {}) == ("account=alice-acct", False)
    assert accounts.status("notes", "alice")["state"] == "ready"
