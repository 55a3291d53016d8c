"""A real stdio MCP server's tools: registered deferred, validated, called, capped, streamed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openprogram.agent.types import AgentToolResult
from openprogram.mcp import Backoff, MCPManager, MCPTool
from openprogram.programs import registry
from openprogram.programs.registry import restore_registry, snapshot_registry

from .conftest import WAIT, demo_config, is_ready

DEMO_TOOLS = {"echo", "add", "slow_count", "fail", "big_output", "pixel", "evolve", "crash"}


@pytest.fixture(scope="module")
def demo():
    """One demo server for the module: these tests only call tools, none changes the server."""
    snapshot = snapshot_registry()
    manager = MCPManager(backoff=Backoff(0.05, 0.4))
    try:
        manager.add(demo_config())
        manager.wait_for("demo", is_ready, timeout=WAIT)
        yield manager
    finally:
        manager.shutdown()
        restore_registry(snapshot)


def _tool(name: str) -> MCPTool:
    tool = registry.get(f"mcp__demo__{name}")
    assert isinstance(tool, MCPTool), f"mcp__demo__{name} is not registered"
    return tool


def test_its_tools_register_deferred_with_the_servers_schema_and_ownership(demo):
    status = demo.status("demo")
    assert {f"mcp__demo__{name}" for name in DEMO_TOOLS} <= set(status["tools"])
    add = _tool("add")
    assert add.defer is True
    assert add.source == "mcp"
    assert add.server == "demo"
    assert add.package == "mcp:demo"
    assert add.unavailable_reason is None
    assert add.description == "Add two integers."
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert set(add.parameters["required"]) == {"a", "b"}


async def test_it_calls_a_tool_and_returns_its_text(demo):
    result = await _tool("add").execute("c1", {"a": 2, "b": 40})
    assert result == AgentToolResult(
        content="42",
        details={"result": 42},
        duration_ms=result.duration_ms,
    )
    assert result.duration_ms > 0


async def test_it_accepts_arguments_as_raw_json_text(demo):
    result = await _tool("echo").execute("c2", json.dumps({"text": "hello"}))
    assert result.content == "hello"
    assert not result.is_error


async def test_it_rejects_arguments_that_break_the_schema_before_sending(demo):
    result = await _tool("add").execute("c3", {"a": "two", "b": 1})
    assert result.is_error
    assert "'mcp__demo__add'" in result.content
    assert "'a'" in result.content
    assert "integer" in result.content
    missing = await _tool("add").execute("c4", {"a": 1})
    assert missing.is_error
    assert "'b' is a required property" in missing.content


async def test_it_turns_an_is_error_result_into_an_error_result(demo):
    result = await _tool("fail").execute("c5", {"message": "disk on fire"})
    assert result.is_error
    assert "disk on fire" in result.content


async def test_it_streams_progress_notifications_to_on_update_before_the_result(demo):
    updates: list[str] = []

    async def on_update(text: str) -> None:
        updates.append(text)

    result = await _tool("slow_count").execute(
        "c6", {"steps": 3, "delay": 0.01}, on_update=on_update
    )
    assert result.content == "counted to 3"
    assert updates == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]


async def test_the_dispatcher_caps_a_large_result_and_persists_the_whole_text(demo):
    from openprogram.programs.call_policy import dispatch_tool_call

    tool = _tool("big_output")
    size = tool.max_result_chars * 3
    result = await dispatch_tool_call(tool, "c7", {"size": size})
    assert result.truncated
    assert len(result.content) <= tool.max_result_chars
    assert result.dropped_chars > size // 2
    assert result.full_result_path is not None
    full = Path(result.full_result_path).read_text()
    assert len(full) == size
    assert full.startswith("0123456789abcdef")
    assert result.full_result_path in result.content


async def test_it_returns_images_as_attachments(demo):
    result = await _tool("pixel").execute("c8", {})
    assert "a single pixel" in result.content
    assert result.attachments == [
        {"type": "image", "mime_type": "image/png", "data": result.attachments[0]["data"]}
    ]
    assert result.attachments[0]["data"].startswith("iVBORw0KGgo")


async def test_it_enforces_the_per_server_timeout_and_stays_usable(demo):
    # Long enough that a loaded machine still streams a first step (0.05 s) inside it;
    # the call (100 steps, 5 s) outlasts it on any machine.
    demo.update(demo_config(timeout=2.5)).result(WAIT)
    try:
        slow = _tool("slow_count")
        assert slow.server_timeout == 2.5
        updates: list[str] = []
        result = await slow.execute("c9", {"steps": 100, "delay": 0.05}, on_update=updates.append)
    finally:
        demo.update(demo_config()).result(WAIT)
    assert result.is_error
    assert "timed out after 2.5s" in result.content
    assert updates, "progress before the timeout should have been streamed"
    assert result.details["progress"].startswith("step 1 of 100")
    after = await _tool("echo").execute("c10", {"text": "still here"})
    assert after.content == "still here"


async def test_it_honours_cancel_and_the_server_keeps_serving(demo):
    cancel = asyncio.Event()
    started = asyncio.Event()

    def on_update(text: str) -> None:
        started.set()

    call = asyncio.create_task(
        _tool("slow_count").execute(
            "c11", {"steps": 200, "delay": 0.05}, cancel=cancel, on_update=on_update
        )
    )
    await asyncio.wait_for(started.wait(), WAIT)
    cancel.set()
    result = await asyncio.wait_for(call, WAIT)
    assert result.is_error
    assert "cancelled" in result.content
    after = await _tool("add").execute("c12", {"a": 1, "b": 1})
    assert after.content == "2"


async def test_calls_from_many_tasks_share_the_session(demo):
    results = await asyncio.gather(
        *(_tool("add").execute(f"p{i}", {"a": i, "b": i}) for i in range(10))
    )
    assert [r.content for r in results] == [str(2 * i) for i in range(10)]
