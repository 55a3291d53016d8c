"""One call policy for every tool kind: a plugin's AgentTool, an Agent method, an MCP tool
(a real stdio server) and an @function get the same outcome through the dispatcher's
``dispatch_tool_call`` — approval denied (never runs) and granted, timeout, cancel,
oversize result (capped, full text persisted and readable), streaming over capacity."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from openprogram import Agent
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import AgentTool, AgentToolResult, ApprovalDecision
from openprogram.programs.call_policy import dispatch_tool_call
from openprogram.programs.decorator import function

KINDS = ["plugin", "agent_method", "function", "mcp"]
CAP = 2_000
STREAM_CAPACITY = 300
_release = threading.Event()
_started = threading.Event()
"""Set when a slow body is running (an MCP tool's first progress report says so)."""
_ran: list[str] = []
_SLOW_SECONDS = 30
"""How long every slow body would hold its call: "promptly" means well before this."""


class Behaviours:
    """The same four behaviours, written as each kind of tool."""

    def __init__(self, tools: dict[str, AgentTool], args: dict[str, dict[str, Any]]):
        self.tools = tools
        self.args = args

    async def call(self, behaviour: str, **kwargs: Any) -> AgentToolResult:
        return await dispatch_tool_call(
            self.tools[behaviour], f"call-{behaviour}", self.args[behaviour], **kwargs
        )


def _configure(tool: AgentTool) -> AgentTool:
    tool.max_result_chars = CAP
    tool.stream_capacity_chars = STREAM_CAPACITY
    return tool


# --- a plugin's own AgentTool subclass ------------------------------------------------------


class PluginTool(AgentTool):
    def __init__(self, behaviour: str) -> None:
        super().__init__(name=f"plugin_{behaviour}", description="A plugin tool.")
        self.behaviour = behaviour

    async def execute(self, call_id, args, cancel=None, on_update=None):
        if self.behaviour == "quick":
            _ran.append(self.name)
            return AgentToolResult(content="ran")
        if self.behaviour == "big":
            return AgentToolResult(content="0123456789" * (CAP * 3 // 10))
        _started.set()
        for step in range(10_000):  # slow / stream: emit, then wait; ignores cancel
            if on_update is not None and self.behaviour == "stream":
                on_update(f"line {step:05d}\n")
            await asyncio.sleep(0.001 if self.behaviour == "stream" else 0.05)
        return AgentToolResult(content="never")


def _plugin() -> Behaviours:
    behaviours = ("quick", "slow", "big", "stream")
    return Behaviours(
        {b: _configure(PluginTool(b)) for b in behaviours}, {b: {} for b in behaviours}
    )


# --- @function and an Agent method -----------------------------------------------------------


def _quick() -> str:
    _ran.append("quick")
    return "ran"


def _slow() -> str:
    _started.set()
    _release.wait(_SLOW_SECONDS)  # a sync body that cannot be killed: the call must still return
    return "never"


def _big() -> str:
    return "0123456789" * (CAP * 3 // 10)


async def _stream(on_update: Callable[[str], None]) -> str:
    for step in range(10_000):
        on_update(f"line {step:05d}\n")
        await asyncio.sleep(0.001)
    return "never"


def _functions() -> Behaviours:
    tools = {}
    for name, body in (("quick", _quick), ("slow", _slow), ("big", _big), ("stream", _stream)):
        decorated = function(
            name=f"fn_{name}", description=f"{name} body.", register_globally=False
        )(body)
        tools[name] = _configure(decorated._agent_tool)
    return Behaviours(tools, {name: {} for name in tools})


class PolicyAgent(Agent):
    method_options = {
        name: {"tool": True, "register_globally": False}
        for name in ("quick", "slow", "big", "stream")
    }

    def quick(self) -> str:
        """Run at once."""
        return _quick()

    def slow(self) -> str:
        """Take long."""
        return _slow()

    def big(self) -> str:
        """Return a lot."""
        return _big()

    async def stream(self, on_update: Callable[[str], None]) -> str:
        """Stream a lot."""
        return await _stream(on_update)


def _agent_methods() -> Behaviours:
    agent = PolicyAgent()
    tools = {
        name: _configure(getattr(agent, name)._agent_tool) for name in PolicyAgent.method_options
    }
    return Behaviours(tools, {name: {} for name in tools})


# --- a real MCP server over stdio ----------------------------------------------------------


async def _mcp(manager) -> Behaviours:
    from openprogram.programs import registry
    from tests.integration.mcp.conftest import WAIT, demo_config, is_ready

    manager.add(demo_config())
    await asyncio.to_thread(manager.wait_for, "demo", is_ready, timeout=WAIT)

    def tool(remote: str) -> AgentTool:
        found = registry.get(f"mcp__demo__{remote}")
        assert found is not None
        return _configure(found)

    return Behaviours(
        {
            "quick": tool("echo"),
            "slow": tool("slow_count"),
            "big": tool("big_output"),
            "stream": tool("slow_count"),
        },
        {
            "quick": {"text": "ran"},
            "slow": {"steps": 600, "delay": 0.05},  # 30 s
            "big": {"size": CAP * 3},
            "stream": {"steps": 30_000, "delay": 0.001},  # outlasts the 3 s budget
        },
    )


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def approvals(tmp_path: Path):
    asked: list[tuple[str, dict]] = []
    verdict = {"approved": True}

    async def hook(request):
        asked.append((request.call_id, dict(request.arguments)))
        return ApprovalDecision(approved=verdict["approved"], reason="not today")

    token = current_turn.set(TurnContext(user_id="alice", workspace=tmp_path, approval_hook=hook))
    yield asked, verdict
    current_turn.reset(token)


@pytest.fixture(params=KINDS)
async def kind(request, clean_registry) -> AsyncIterator[Behaviours]:
    _release.clear()
    _started.clear()
    _ran.clear()
    if request.param == "mcp":
        from openprogram.mcp.manager import Backoff, MCPManager

        manager = MCPManager(backoff=Backoff(initial=0.05, maximum=0.4))
        try:
            yield await _mcp(manager)
        finally:
            await asyncio.to_thread(manager.shutdown)
    else:
        yield {"plugin": _plugin, "function": _functions, "agent_method": _agent_methods}[
            request.param
        ]()
    _release.set()


# --- the same outcomes ---------------------------------------------------------------------


async def test_a_denied_call_never_runs(kind, approvals):
    asked, verdict = approvals
    verdict["approved"] = False
    kind.tools["quick"].requires_approval = True
    result = await kind.call("quick")
    assert result.is_error and "denied" in result.content and "not today" in result.content
    assert asked == [("call-quick", kind.args["quick"])]
    assert _ran == []
    assert "ran" not in result.content.replace("It was not run", "")


async def test_an_approved_call_runs_once_asked(kind, approvals):
    asked, _ = approvals
    kind.tools["quick"].requires_approval = True
    result = await kind.call("quick")
    assert not result.is_error and "ran" in result.content
    assert len(asked) == 1


async def test_a_call_past_its_budget_times_out_promptly(kind, approvals):
    kind.tools["slow"].timeout = 0.3
    started = asyncio.get_running_loop().time()
    result = await kind.call("slow")
    elapsed = asyncio.get_running_loop().time() - started
    assert result.is_error and "timed out after 0.3 s" in result.content
    assert elapsed < _SLOW_SECONDS / 2  # not held for the body's 30 s (a 10x slower machine too)


async def test_cancel_stops_a_call_promptly(kind, approvals):
    cancel = asyncio.Event()
    call = asyncio.create_task(
        kind.call("slow", cancel=cancel, on_update=lambda _text: _started.set())
    )
    assert await asyncio.to_thread(_started.wait, 30), "the slow body never started"
    cancel.set()
    result = await asyncio.wait_for(call, _SLOW_SECONDS / 2)
    assert result.is_error and "cancelled" in result.content


async def test_an_oversize_result_is_capped_and_the_full_text_persisted(kind, approvals):
    result = await kind.call("big")
    assert result.truncated and len(result.content) <= CAP
    assert result.full_result_path is not None
    full = Path(result.full_result_path).read_text()
    assert len(full) == CAP * 3 and full.startswith("0123456789")


async def test_streaming_past_capacity_keeps_a_bounded_tail(kind, approvals):
    # A budget the stream outlasts on any machine, long enough that even a slow one
    # streams past the capacity (~30 lines) before it ends.
    kind.tools["stream"].timeout = 3.0
    seen: list[str] = []
    result = await kind.call("stream", on_update=seen.append)
    assert result.is_error and "timed out" in result.content
    assert sum(map(len, seen)) > STREAM_CAPACITY  # far more streamed than kept
    kept = result.content.split("Output so far:\n", 1)[1]
    assert 0 < len(kept) <= STREAM_CAPACITY + 200  # the tail, plus its omission marker


# --- the team policy decides every kind's calls the same way ---------------------------------


def _with_policy(*rules) -> None:
    from openprogram.agent.context import get_turn
    from openprogram.programs.rules import PolicySet

    get_turn().policy = PolicySet(rules=rules)


async def test_a_deny_rule_refuses_naming_the_rule_and_never_asks_or_runs(kind, approvals):
    from openprogram.programs.rules import Rule

    asked, _ = approvals
    _with_policy(Rule(kind.tools["quick"].name, "deny", id=21, reason="not here"))
    result = await kind.call("quick")
    assert result.is_error and "refused by policy" in result.content
    assert "rule #21" in result.content and "not here" in result.content
    assert asked == [] and _ran == []


async def test_an_ask_rule_asks_a_tool_that_never_asks_and_names_the_rule(kind, approvals):
    from openprogram.programs.rules import Rule

    asked, verdict = approvals
    verdict["approved"] = False
    kind.tools["quick"].requires_approval = False
    _with_policy(Rule(kind.tools["quick"].name, "ask", id=22))
    result = await kind.call("quick")
    assert result.is_error and "denied" in result.content
    assert len(asked) == 1 and _ran == []


async def test_an_allow_rule_runs_a_tool_that_would_ask_without_asking(kind, approvals):
    from openprogram.programs.rules import Rule

    asked, _ = approvals
    kind.tools["quick"].requires_approval = True
    _with_policy(Rule(kind.tools["quick"].name, "allow", id=23))
    result = await kind.call("quick")
    assert not result.is_error and "ran" in result.content
    assert asked == []


async def test_an_unattended_ask_is_refused_naming_the_rule(kind, tmp_path):
    from openprogram.agent.approvals import approval_hook_for_turn
    from openprogram.programs.rules import PolicySet, Rule

    events = []

    async def emit(event):
        events.append(event)

    hook = approval_hook_for_turn(host_hook=None, attended=False, emit=emit, timeout=1)
    rule = Rule(kind.tools["quick"].name, "ask", id=24, reason="reviewed calls only")
    token = current_turn.set(
        TurnContext(
            user_id="alice",
            workspace=tmp_path,
            attended=False,
            approval_hook=hook,
            policy=PolicySet(rules=(rule,)),
        )
    )
    try:
        result = await kind.call("quick")
    finally:
        current_turn.reset(token)
    assert result.is_error and "nobody is attending" in result.content
    assert "rule #24" in result.content and "reviewed calls only" in result.content
    assert _ran == []
    assert events[0].rule.endswith("(reviewed calls only)")
