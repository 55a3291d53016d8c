"""Layer 3 (channel, agent profile) and layer 4 (check_fn, requires_env, can_use)."""

from __future__ import annotations

import pytest

from openprogram.programs import _availability
from openprogram.programs.policy import resolve_tools


def test_unsafe_in_hides_a_tool_only_on_that_channel(add_tool):
    add_tool("read")
    add_tool("write", unsafe_in=frozenset({"plan"}))
    add_tool("bash", unsafe_in=frozenset({"plan", "telegram"}))
    planning = resolve_tools(source="plan")
    assert planning.names == ["read"]
    assert planning.decision("write").summary == "L3: unsafe_in plan"
    assert resolve_tools(source="web").names == ["read", "write", "bash"]
    assert resolve_tools().names == ["read", "write", "bash"]


def test_an_agent_profile_toolset_narrows_the_session(add_tool):
    for name in ("read", "glob", "web_search", "bash"):
        add_tool(name)
    resolution = resolve_tools(agent_toolset="safe")
    assert resolution.names == ["read", "glob", "web_search"]
    assert resolution.decision("bash").summary == "L3: not in agent profile toolset 'safe'"


def test_the_profile_picker_narrows_within_the_agent_profile(add_tool):
    for name in ("read", "glob", "web_search", "bash"):
        add_tool(name)
    resolution = resolve_tools(profile=["glob", "bash"], agent_toolset="safe")
    assert resolution.names == ["glob"]
    assert resolution.decision("bash").layer == "L3"
    assert resolution.decision("read").layer == "L2b"


def test_availability_is_only_checked_when_asked(add_tool, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)
    add_tool("paid_search", requires_env=("OPENPROGRAM_TEST_KEY",))
    assert resolve_tools().names == ["paid_search"]
    resolution = resolve_tools(only_available=True)
    assert resolution.names == []
    assert resolution.decision("paid_search").summary == (
        "L4: requires_env OPENPROGRAM_TEST_KEY is not set"
    )


def test_an_empty_env_var_counts_as_unset(add_tool, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_TEST_KEY", "")
    add_tool("paid_search", requires_env=("OPENPROGRAM_TEST_KEY",))
    assert resolve_tools(only_available=True).names == []
    monkeypatch.setenv("OPENPROGRAM_TEST_KEY", "sk-test")
    assert resolve_tools(only_available=True).names == ["paid_search"]


def test_check_fn_is_called_once_within_its_cache_window(add_tool):
    calls: list[int] = []

    def docker_running() -> bool:
        calls.append(1)
        return False

    add_tool("docker", check_fn=docker_running)
    for _ in range(5):
        resolution = resolve_tools(only_available=True)
    assert resolution.names == [] and len(calls) == 1
    assert resolution.decision("docker").reason == "check_fn returned False"


def test_check_fn_is_asked_again_after_its_cache_expires(add_tool, monkeypatch):
    answers = iter([False, True])
    add_tool("docker", check_fn=lambda: next(answers))
    assert resolve_tools(only_available=True).names == []
    clock = _availability.time.monotonic() + _availability.CHECK_FN_TTL_SECONDS + 1
    monkeypatch.setattr(_availability.time, "monotonic", lambda: clock)
    assert resolve_tools(only_available=True).names == ["docker"]


def test_a_raising_gate_hides_its_tool_with_the_error_as_reason(add_tool):
    def broken() -> bool:
        raise RuntimeError("socket missing")

    add_tool("docker", check_fn=broken)
    add_tool("read")
    resolution = resolve_tools(only_available=True)
    assert resolution.names == ["read"]
    assert resolution.decision("docker").reason == "check_fn raised RuntimeError: socket missing"


def test_an_async_gate_is_refused_rather_than_treated_as_true(add_tool):
    async def sneaky() -> bool:
        return True

    add_tool("docker", check_fn=sneaky)
    resolution = resolve_tools(only_available=True)
    assert resolution.names == []
    assert "synchronous" in resolution.decision("docker").reason


def test_can_use_receives_the_session_context_as_keywords(add_tool):
    seen: list[dict] = []

    def admins_only(**context) -> bool:
        seen.append(context)
        return context.get("role") == "admin"

    add_tool("shutdown", can_use=admins_only)
    as_user = resolve_tools(only_available=True, can_use_context={"role": "user", "user_id": 7})
    as_admin = resolve_tools(only_available=True, can_use_context={"role": "admin"})
    assert as_user.names == [] and as_admin.names == ["shutdown"]
    assert seen[0] == {"role": "user", "user_id": 7}
    assert as_user.decision("shutdown").reason == "can_use returned False"


def test_can_use_that_needs_context_it_did_not_get_is_unavailable(add_tool):
    def needs_user(user_id: int) -> bool:
        return True

    add_tool("mine", can_use=needs_user)
    resolution = resolve_tools(only_available=True)
    assert resolution.names == []
    assert resolution.decision("mine").reason.startswith("can_use raised TypeError")


def test_an_unavailable_reason_set_at_run_time_hides_the_tool(add_tool):
    tool = add_tool("mcp__files__read", source="mcp", server="files")
    assert resolve_tools(only_available=True).names == ["mcp__files__read"]
    tool.unavailable_reason = "MCP server 'files' is not connected"
    resolution = resolve_tools(only_available=True)
    assert resolution.names == []
    assert resolution.decision("mcp__files__read").summary == (
        "L4: MCP server 'files' is not connected"
    )


@pytest.mark.parametrize("source", ["plan", None])
def test_layer_3_is_checked_before_layer_4(add_tool, monkeypatch, source):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)
    add_tool("bash", unsafe_in=frozenset({"plan"}), requires_env=("OPENPROGRAM_TEST_KEY",))
    row = resolve_tools(source=source, only_available=True).decision("bash")
    assert row.layer == ("L3" if source == "plan" else "L4")
