"""The per-server expose switch: tools register but are never offered (layer 2)."""

from __future__ import annotations

from openprogram.mcp import parse_mcp_servers_json
from openprogram.programs import registry
from openprogram.programs.policy import resolve_tools

from .conftest import WAIT, demo_config, is_ready


def test_an_unexposed_servers_tools_register_but_are_not_offered(manager):
    manager.add(demo_config(expose=False, always_load=True))
    status = manager.wait_for("demo", is_ready, timeout=WAIT)
    assert "mcp__demo__echo" in status["tools"]
    echo = registry.get("mcp__demo__echo")
    assert echo is not None and echo.expose is False
    resolution = resolve_tools()
    assert "mcp__demo__echo" not in {tool.name for tool in resolution.tools}
    trace = {row["name"]: row for row in resolution.explain()}
    assert trace["mcp__demo__echo"]["layer"] == "L2"
    assert "not exposed" in trace["mcp__demo__echo"]["reason"]


def test_turning_expose_back_on_offers_the_tools_without_reconnecting(manager):
    manager.add(demo_config(expose=False, always_load=True))
    manager.wait_for("demo", is_ready, timeout=WAIT)
    retries = manager.status("demo")["retries"]
    manager.update(demo_config(expose=True, always_load=True)).result(WAIT)
    assert registry.get("mcp__demo__echo").expose is True
    assert "mcp__demo__echo" in {tool.name for tool in resolve_tools().tools}
    assert manager.status("demo")["retries"] == retries


def test_the_servers_json_may_say_expose_false():
    (config,) = parse_mcp_servers_json({"mcpServers": {"quiet": {"command": "x", "expose": False}}})
    assert config.expose is False
