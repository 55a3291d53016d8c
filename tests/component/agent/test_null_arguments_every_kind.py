"""A model's null means the same to every kind of tool: an @function, an Agent method, a
plugin's own AgentTool subclass and an MCP tool (a real stdio server) each get

* a null for an optional parameter that does not allow null: left out, the default runs;
* a null for an optional parameter that allows null: passed on as null;
* a null for a required parameter: an error result back to the model, the turn goes on;

and the trace (``ToolCallStarted``) and the approval prompt show the arguments as they run,
in a real turn against the fake OpenAI-compatible server and through ``dispatch_tool_call``.

Every kind's tool is ``repeat(text, times=1, suffix="!")`` where ``suffix`` may be null;
its result reads ``<text * times> suffix=<the suffix it got>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openprogram import Agent
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.events import (
    ApprovalRequested,
    ToolCallStarted,
    ToolFinished,
    TurnFinished,
    TurnRequest,
)
from openprogram.agent.types import AgentTool, AgentToolResult, ApprovalDecision, ApprovalRequest
from openprogram.programs import registry
from openprogram.programs.call_policy import dispatch_tool_call
from openprogram.programs.decorator import function
from tests.component.agent.conftest import FAKE_MODEL, of_type, run_turn
from tests.fakes.openai_server import text_reply, tool_calls_reply

KINDS = ["function", "agent_method", "plugin", "mcp"]


def _repeat(text: str, times: int = 1, suffix: str | None = "!") -> str:
    return f"{text * times} suffix={suffix!r}"


@dataclass
class Kind:
    name: str
    tool: AgentTool
    filled_in: bool
    """True when the tool validates into its signature, so approval shows the defaults."""
    received: list[dict[str, Any]] = field(default_factory=list)

    def approved_form(self, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments the approval prompt shows for a call that runs with ``args``."""
        return {"times": 1, "suffix": "!", **args} if self.filled_in else args


# --- the four kinds, each registered as the only tool (inside empty_registry) -------------


def _function_kind() -> Kind:
    @function(name="repeat")
    def repeat(text: str, times: int = 1, suffix: str | None = "!") -> str:
        """Repeat the text."""
        return _repeat(text, times, suffix)

    return Kind("function", registry.get("repeat"), filled_in=True)


class RepeatAgent(Agent):
    method_options = {"repeat": {"tool": True}}

    def repeat(self, text: str, times: int = 1, suffix: str | None = "!") -> str:
        """Repeat the text."""
        return _repeat(text, times, suffix)


def _agent_method_kind() -> Kind:
    RepeatAgent()
    return Kind("agent_method", registry.get("repeat"), filled_in=True)


class RepeatPlugin(AgentTool):
    """A plugin's own tool: it reads its arguments itself, defaults included."""

    def __init__(self, received: list[dict[str, Any]]) -> None:
        super().__init__(
            name="repeat",
            description="Repeat the text.",
            source="plugin",
            parameters={
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "times": {"type": "integer", "default": 1},
                    "suffix": {"type": "string", "nullable": True, "default": "!"},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
        )
        self.received = received

    async def execute(self, call_id, args, cancel=None, on_update=None):
        self.received.append(dict(args))
        # A null that reached here for times would fail the multiplication.
        text = _repeat(args["text"], args.get("times", 1), args.get("suffix", "!"))
        return AgentToolResult(content=text)


def _plugin_kind() -> Kind:
    received: list[dict[str, Any]] = []
    return Kind("plugin", registry.register(RepeatPlugin(received)), False, received)


async def _mcp_kind(manager) -> Kind:
    from tests.integration.mcp.conftest import WAIT, demo_config, is_ready

    manager.add(demo_config())
    await asyncio.to_thread(manager.wait_for, "demo", is_ready, timeout=WAIT)
    return Kind("mcp", registry.get("mcp__demo__repeat"), filled_in=False)


@pytest.fixture(params=KINDS)
async def kind(request, empty_registry) -> AsyncIterator[Kind]:
    if request.param == "mcp":
        from openprogram.mcp.manager import Backoff, MCPManager

        manager = MCPManager(backoff=Backoff(initial=0.05, maximum=0.4))
        try:
            yield await _mcp_kind(manager)
        finally:
            await asyncio.to_thread(manager.shutdown)
        return
    yield {"function": _function_kind, "agent_method": _agent_method_kind, "plugin": _plugin_kind}[
        request.param
    ]()


# --- in a real turn ----------------------------------------------------------------------


async def test_nulls_mean_the_same_to_every_kind_and_a_required_null_does_not_end_the_turn(
    kind, fake_openai
):
    name = kind.tool.name
    fake_openai.script(
        tool_calls_reply((name, {"text": "ab", "times": None})),
        tool_calls_reply((name, {"text": "ab", "times": 2, "suffix": None})),
        tool_calls_reply((name, {"text": None, "times": None})),
        text_reply("done"),
    )

    events = await run_turn(TurnRequest(text="repeat", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)
    assert [(f.preview, f.is_error) for f in finished[:2]] == [
        ("ab suffix='!'", False),  # times left out: the default 1 ran
        ("abab suffix=None", False),  # suffix allows null: null arrived
    ]
    refused = finished[2]
    assert refused.is_error
    assert f"invalid arguments for {name!r} at 'text'" in refused.preview
    assert "'text' is required" in refused.preview
    assert [s.arguments for s in of_type(events, ToolCallStarted)] == [
        {"text": "ab"},
        {"text": "ab", "times": 2, "suffix": None},
        {"text": None, "times": None},  # refused, so shown as the model sent it
    ]
    end = events[-1]
    assert isinstance(end, TurnFinished)
    assert (end.stop_reason, end.text) == ("completed", "done")
    refusal = fake_openai.requests[3]["messages"][-1]
    assert refusal["role"] == "tool" and "'text' is required" in refusal["content"]
    if kind.name == "plugin":
        assert kind.received == [{"text": "ab"}, {"text": "ab", "times": 2, "suffix": None}]


async def test_the_approval_prompt_shows_the_arguments_that_run(kind, fake_openai):
    kind.tool.requires_approval = True
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True)

    fake_openai.script(
        tool_calls_reply((kind.tool.name, {"text": "ab", "times": None})), text_reply("ok")
    )

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, approval_hook=approver))

    started = of_type(events, ToolCallStarted)[0]
    assert started.arguments == {"text": "ab"}
    expected = kind.approved_form({"text": "ab"})
    assert [(r.call_id, r.arguments) for r in asked] == [(started.call_id, expected)]
    prompt = of_type(events, ApprovalRequested)[0]
    assert (prompt.call_id, prompt.arguments) == (started.call_id, expected)
    assert None not in prompt.arguments.values()
    finished = of_type(events, ToolFinished)[0]
    assert (finished.preview, finished.is_error) == ("ab suffix='!'", False)


# --- through dispatch_tool_call, outside the agent loop ------------------------------------


@pytest.fixture
def approvals(tmp_path: Path):
    asked: list[tuple[str, dict[str, Any]]] = []

    async def hook(request: ApprovalRequest) -> ApprovalDecision:
        asked.append((request.call_id, dict(request.arguments)))
        return ApprovalDecision(approved=True)

    token = current_turn.set(TurnContext(user_id="alice", workspace=tmp_path, approval_hook=hook))
    yield asked
    current_turn.reset(token)


async def test_dispatch_drops_the_null_before_the_approval_is_bound(kind, approvals):
    kind.tool.requires_approval = True

    result = await dispatch_tool_call(kind.tool, "call-1", {"text": "ab", "times": None})

    assert (result.content, result.is_error) == ("ab suffix='!'", False)
    assert approvals == [("call-1", kind.approved_form({"text": "ab"}))]
    if kind.name == "plugin":
        assert kind.received == [{"text": "ab"}]


async def test_dispatch_passes_a_null_the_schema_allows(kind, approvals):
    result = await dispatch_tool_call(kind.tool, "call-2", {"text": "ab", "suffix": None})
    assert (result.content, result.is_error) == ("ab suffix=None", False)
