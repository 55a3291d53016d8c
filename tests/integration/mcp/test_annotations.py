"""MCP tool annotations feed gating, and a lying server can only make a tool stricter."""

from __future__ import annotations

import pytest
from mcp import types as mcp_types

from openprogram.mcp.tool import MCPTool
from openprogram.programs import registry
from openprogram.programs.policy import resolve_tools


def _tool(name: str, destructive_needs_approval: bool = True, **hints: bool) -> MCPTool:
    return MCPTool(
        caller=None,  # never called here
        server="hinted",
        remote_name=name,
        description=f"{name} tool",
        input_schema={"type": "object", "properties": {}},
        defer=False,
        timeout=5,
        annotations=mcp_types.ToolAnnotations(**hints) if hints else None,
        destructive_needs_approval=destructive_needs_approval,
    )


@pytest.fixture
def hinted(clean_registry):
    tools = {
        "peek": _tool("peek", readOnlyHint=True),
        "plain": _tool("plain"),
        "gentle": _tool("gentle", destructiveHint=False),
        "wipe": _tool("wipe", destructiveHint=True),
        "liar": _tool("liar", readOnlyHint=True, destructiveHint=True),
        "web": _tool("web", readOnlyHint=True, openWorldHint=True),
    }
    for tool in tools.values():
        registry.register(tool)
    return tools


def _offered(**kwargs) -> set[str]:
    return {t.name.removeprefix("mcp__hinted__") for t in resolve_tools(**kwargs).tools}


def test_plan_mode_offers_only_tools_that_say_they_read_only(hinted):
    offered = _offered(source="plan")
    assert {"peek", "web"} <= offered
    assert not {"plain", "gentle", "wipe", "liar"} & offered
    assert {"peek", "plain", "gentle", "wipe", "liar", "web"} <= _offered()


def test_a_destructive_tool_asks_first_unless_the_operator_says_otherwise(hinted):
    assert hinted["wipe"].requires_approval is True
    assert hinted["liar"].requires_approval is True  # read-only AND destructive: the stricter
    assert hinted["gentle"].requires_approval is False  # says outright it destroys nothing
    assert hinted["peek"].requires_approval is False
    assert (
        _tool("wipe2", destructive_needs_approval=False, destructiveHint=True).requires_approval
        is False
    )


def test_a_tool_with_no_annotations_is_destructive_as_the_spec_defaults_say(hinted):
    # MCP: readOnlyHint defaults to false and destructiveHint to true.
    assert hinted["plain"].hints == {"read_only": False, "destructive": True, "open_world": False}
    assert hinted["plain"].requires_approval is True
    assert _tool("bare", destructive_needs_approval=False).requires_approval is False
    assert "mcp__hinted__plain" not in {t.name for t in resolve_tools(source="plan").tools}


def test_a_read_only_claim_never_bypasses_a_profile_a_deny_or_a_disable(hinted):
    peek = "mcp__hinted__peek"
    assert "peek" not in _offered(source="plan", deny=[peek])
    assert "peek" not in _offered(source="plan", disabled=[peek])
    assert "peek" not in _offered(source="plan", profile=["mcp__hinted__web"])


def test_open_world_is_kept_for_the_catalog(hinted):
    assert hinted["web"].hints == {"read_only": True, "destructive": False, "open_world": True}


@pytest.mark.django_db
def test_the_admins_override_for_destructive_tools_reaches_the_framework():
    from tools_app.mcp.models import MCPServer
    from tools_app.mcp.services import mcp_server_config

    trusting = MCPServer.objects.create(
        name="trusting", command="true", destructive_without_approval=True
    )
    careful = MCPServer.objects.create(name="careful", command="true")

    assert mcp_server_config(server=trusting).destructive_without_approval is True
    assert mcp_server_config(server=careful).destructive_without_approval is False
