"""A real MCP server's richer results, cancellation and question routing."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.elicitation import ElicitationAnswer, ElicitationRequest
from openprogram.mcp import MCPTool
from openprogram.programs import registry

from .conftest import LEGACY, MODERN

pytestmark = pytest.mark.parametrize("proto", [MODERN, LEGACY], indirect=True)


def _tool(name: str) -> MCPTool:
    tool = registry.get(f"mcp__proto__{name}")
    assert isinstance(tool, MCPTool)
    return tool


async def _until(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_structured_content_with_an_output_schema_reaches_the_model_as_json(proto):
    tool = _tool("forecast")
    assert tool.output_schema is not None
    assert tool.output_schema["required"] == ["city", "celsius"]
    result = await tool.execute("s1", {"city": "Oslo"})
    assert not result.is_error
    assert json.loads(result.content) == {"city": "Oslo", "celsius": 21.5}
    assert result.details == {"city": "Oslo", "celsius": 21.5}


async def test_resource_links_and_embedded_resources_are_named_for_the_model(proto):
    result = await _tool("resource_blocks").execute("s2", {})
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0] == (
        "[resource link readme <file:///notes/readme.md> (text/markdown): The notes' readme]"
    )
    assert lines[1:] == ["[resource <file:///notes/today.txt> (text/plain)]", "buy milk"]


async def test_stopping_a_call_sends_the_cancellation_to_the_server(proto):
    marker = proto.marker_dir / "cancelled"
    marker.unlink(missing_ok=True)
    cancel, started = asyncio.Event(), asyncio.Event()
    call = asyncio.create_task(
        _tool("wait_for_cancel").execute("s3", {"seconds": 60}, cancel, lambda _: started.set())
    )
    await asyncio.wait_for(started.wait(), 10)  # the server is working on it
    cancel.set()
    result = await asyncio.wait_for(call, 5)
    assert result.is_error and "was cancelled" in result.content
    await _until(marker.exists)
    assert marker.read_text(), "the server names the request it stopped"
    after = await _tool("forecast").execute("s4", {"city": "Bergen"})
    assert json.loads(after.content)["city"] == "Bergen"


class _Asker:
    def __init__(self) -> None:
        self.asked: list[ElicitationRequest] = []

    async def hook(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return ElicitationAnswer("accept", {"email": "someone@example.com"})


async def test_with_calls_of_two_turns_in_flight_a_question_reaches_only_its_own_person(proto):
    """2026-07-28 asks inside the call, so the question is the asking call's; a 2025
    server's request names no call, so with two turns' calls in flight nobody is asked."""
    alice, bob = _Asker(), _Asker()
    bob_cancel, bob_started = asyncio.Event(), asyncio.Event()

    async def in_turn(asker: _Asker, name: str, args: dict[str, Any], **kw: Any) -> Any:
        current_turn.set(TurnContext(elicitation_hook=asker.hook))
        return await _tool(name).execute(f"{name}-call", args, **kw)

    bob_call = asyncio.create_task(
        in_turn(
            bob,
            "wait_for_cancel",
            {"seconds": 60},
            cancel=bob_cancel,
            on_update=lambda _: bob_started.set(),
        )
    )
    await asyncio.wait_for(bob_started.wait(), 10)
    try:
        result = await in_turn(alice, "ask_profile", {})
    finally:
        bob_cancel.set()
        await bob_call
    if proto.revision == MODERN:
        assert json.loads(result.content)["action"] == "accept"
        assert [r.tool_call_id for r in alice.asked] == ["ask_profile-call"]
        assert bob.asked == []
    else:
        assert json.loads(result.content)["action"] == "decline"
        assert alice.asked == [] and bob.asked == []
