"""Agent method tools that run the model again, through the real dispatcher and offline model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from openprogram import Agent, function
from openprogram.agent.context import get_turn
from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import (
    Event,
    ToolCallStarted,
    ToolFinished,
    TurnFinished,
    TurnRequest,
)
from openprogram.agentic_programming import CallTreeUpdated, context

pytestmark = pytest.mark.usefixtures("clean_registry")


async def run_turn(
    request: TurnRequest, on_event: Callable[[Event], None] | None = None
) -> list[Event]:
    events: list[Event] = []

    async def consume() -> None:
        async for event in process_user_turn(request):
            events.append(event)
            if on_event is not None:
                on_event(event)

    await asyncio.wait_for(consume(), timeout=30)
    return events


def finished(events: list[Event], name: str) -> ToolFinished:
    (event,) = [e for e in events if isinstance(e, ToolFinished) and e.name == name]
    return event


@pytest.fixture
def shout():
    @function(name="shout_nr")
    def shout_nr(text: str) -> str:
        """Shout the text back."""
        return text.upper()

    return shout_nr


class Relay(Agent):
    """Asks the model to call shout_nr, from a sync and from an async method."""

    method_options = {
        "relay_nr": {"tool": True},
        "arelay_nr": {"tool": True},
        "broken_nr": {"tool": True},
    }

    def __init__(self) -> None:
        super().__init__()
        self.turns_seen: list[tuple[object, object]] = []

    def relay_nr(self, word: str) -> str:
        """Relay a word through a nested model run (sync)."""
        before = get_turn()
        text = self(f"/shout_nr {word}")
        self.turns_seen.append((before, get_turn()))
        return f"relayed: {text}"

    async def arelay_nr(self, word: str) -> str:
        """Relay a word through a nested model run (async)."""
        before = get_turn()
        text = await self.arun(f"/shout_nr {word}")
        self.turns_seen.append((before, get_turn()))
        return f"relayed: {text}"

    def broken_nr(self) -> str:
        """Always fails."""
        return self._fail_nr()

    def _fail_nr(self) -> str:
        raise RuntimeError("the archive is closed")


@pytest.mark.parametrize("method", ["relay_nr", "arelay_nr"])
async def test_an_agent_method_tool_runs_a_nested_model_turn(shout, method):
    agent = Relay()
    events = await run_turn(TurnRequest(text=f"/{method} word=otters"))
    outer = finished(events, method)
    assert not outer.is_error
    assert "relayed: Results of 1 tool call" in outer.preview
    assert "shout_nr: ok — OTTERS" in outer.preview
    assert events[-1].stop_reason == "completed"
    (before, after) = agent.turns_seen[0]
    assert before is not None and after is before  # the inner turn did not clobber ours


async def test_nested_tool_events_reach_the_outer_turn_with_parent_call_id(shout):
    Relay()
    events = await run_turn(TurnRequest(text="/relay_nr word=x"))
    starts = {e.name: e for e in events if isinstance(e, ToolCallStarted)}
    assert starts["relay_nr"].parent_call_id is None
    assert starts["shout_nr"].parent_call_id == starts["relay_nr"].call_id
    assert finished(events, "shout_nr").parent_call_id == starts["relay_nr"].call_id
    order = [(type(e).__name__, getattr(e, "name", "")) for e in events]
    assert order.index(("ToolFinished", "shout_nr")) < order.index(("ToolFinished", "relay_nr"))


async def test_the_turn_records_its_call_tree(shout):
    Relay()
    events = await run_turn(TurnRequest(text="/relay_nr word=x"))
    (tree,) = [e for e in events if isinstance(e, CallTreeUpdated)]
    starts = {e.name: e for e in events if isinstance(e, ToolCallStarted)}
    (root,) = [n for n in tree.nodes if n["id"] == tree.root_id]
    assert root["method"] == "Relay.relay_nr"
    assert root["tool_call_id"] == starts["relay_nr"].call_id
    assert root["inputs"] == {"word": "x"} and root["status"] == "ok"
    assert tree.to_dict()["type"] == "call_tree"


async def test_the_nested_run_is_not_offered_the_calling_method(shout):
    class Loop(Agent):
        method_options = {"loop_nr": {"tool": True}}

        async def loop_nr(self) -> str:
            """Ask the model to call me again."""
            return await self.arun("/loop_nr")

    Loop()
    events = await run_turn(TurnRequest(text="/loop_nr"))
    assert "'loop_nr' is not offered" in finished(events, "loop_nr").preview
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == ["loop_nr"]


async def test_a_nested_run_is_never_offered_what_the_outer_turn_was_not(shout):
    Relay()
    events = await run_turn(TurnRequest(text="/relay_nr word=x", disabled={"shout_nr"}))
    assert "'shout_nr' is not offered" in finished(events, "relay_nr").preview
    assert [e.name for e in events if isinstance(e, ToolCallStarted)] == ["relay_nr"]


async def test_a_failing_method_becomes_an_error_result_and_a_failed_scope(shout):
    Relay()
    events = await run_turn(TurnRequest(text="/broken_nr"))
    result = finished(events, "broken_nr")
    assert result.is_error and "the archive is closed" in result.preview
    (tree,) = [e for e in events if isinstance(e, CallTreeUpdated)]
    statuses = {n["method"]: n["status"] for n in tree.nodes}
    assert statuses == {"Relay.broken_nr": "error", "Relay._fail_nr": "error"}
    assert events[-1].stop_reason == "completed"


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_stopping_the_outer_turn_cancels_the_nested_run_and_its_tool(style):
    inner_started = asyncio.Event()
    inner_cancelled = asyncio.Event()
    loop = asyncio.get_running_loop()

    @function(name="wait_nr")
    async def wait_nr(cancel: asyncio.Event) -> str:
        """Wait until cancelled."""
        loop.call_soon_threadsafe(inner_started.set)
        try:
            await cancel.wait()
        finally:
            # Stop sets the cancel event and then cancels the task: either may land first.
            loop.call_soon_threadsafe(inner_cancelled.set)
        return "cancelled"

    class Digger(Agent):
        method_options = {"dig_nr": {"tool": True}}

        def __init__(self) -> None:
            super().__init__()
            self.contexts: list = []

        if style == "sync":

            def dig_nr(self) -> str:
                """Dig."""
                self.contexts.append(context())
                return self("/wait_nr")

        else:

            async def dig_nr(self) -> str:
                """Dig."""
                self.contexts.append(context())
                return await self.arun("/wait_nr")

    agent = Digger()
    request = TurnRequest(text="/dig_nr")

    def stop_when_inner_starts(event: Event) -> None:
        if isinstance(event, ToolCallStarted) and event.name == "wait_nr":
            request.cancel.set()

    events = await run_turn(request, stop_when_inner_starts)
    await asyncio.wait_for(inner_cancelled.wait(), timeout=10)
    assert inner_started.is_set()
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "stopped"
    (ctx,) = agent.contexts
    assert ctx.cancelled
    await asyncio.wait_for(_until(lambda: ctx.node.status == "cancelled"), timeout=10)


async def test_a_method_tool_timeout_cancels_its_nested_run():
    inner_cancelled = asyncio.Event()
    loop = asyncio.get_running_loop()

    @function(name="wait_to_nr")
    async def wait_to_nr(cancel: asyncio.Event) -> str:
        """Wait until cancelled."""
        try:
            await cancel.wait()
        finally:
            loop.call_soon_threadsafe(inner_cancelled.set)
        return "cancelled"

    class Slow(Agent):
        method_options = {"slow_nr": {"tool": True, "timeout": 0.3}}

        async def slow_nr(self) -> str:
            """Wait for a tool that never finishes."""
            return await self.arun("/wait_to_nr")

    Slow()
    events = await run_turn(TurnRequest(text="/slow_nr"))
    assert "timed out after 0.3 s" in finished(events, "slow_nr").preview
    await asyncio.wait_for(inner_cancelled.wait(), timeout=10)
    assert events[-1].stop_reason == "completed"


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def test_a_python_call_outside_any_turn_runs_the_model_directly(shout):
    agent = Relay()
    text = await agent.arelay_nr("quiet")
    assert text == "relayed: Results of 1 tool call:\n- shout_nr: ok — QUIET"


class Profiled(Agent):
    method_options = {"profiled_nr": {"tool": True}}

    async def profiled_nr(self, word: str) -> str:
        """Run the model again with the user's 'quiet' tool profile."""
        return await self.arun(f"/shout_nr {word}", toolset="quiet")


async def test_a_nested_run_may_name_one_of_the_users_tool_profiles(shout):
    Profiled()
    request = TurnRequest(
        text="/profiled_nr hello", named_profiles={"quiet": ["shout_nr"], "other": ["read"]}
    )

    events = await run_turn(request)

    assert finished(events, "shout_nr").preview == "HELLO"
    assert "relayed" not in finished(events, "profiled_nr").preview
    assert not finished(events, "profiled_nr").is_error
    assert events[-1].stop_reason == "completed"


async def test_a_users_profile_gives_a_nested_run_nothing_the_outer_turn_lacked(shout):
    Profiled()
    request = TurnRequest(
        text="/profiled_nr hello", named_profiles={"quiet": ["shout_nr"]}, deny=["shout_nr"]
    )

    events = await run_turn(request)

    assert not [
        e for e in events if isinstance(e, ToolFinished) and e.name == "shout_nr" and not e.is_error
    ]
    assert events[-1].stop_reason == "completed"


async def test_a_nested_run_is_decided_by_the_outer_turns_policy(shout):
    from openprogram.programs.rule_conditions import Condition
    from openprogram.programs.rules import PolicySet, Rule

    Relay()
    # The word decides: a pointer condition, checked at call time inside the nested run.
    rule = Rule(
        "shout_nr", "deny", id=31, condition=Condition("pointer", pointer="/text", value='"secret"')
    )
    policy = PolicySet(rules=(rule,))
    events = await run_turn(TurnRequest(text="/relay_nr word=secret", policy=policy))
    inner = finished(events, "shout_nr")
    assert inner.is_error and "refused by policy" in inner.preview and "rule #31" in inner.preview
    events = await run_turn(TurnRequest(text="/relay_nr word=fine", policy=policy))
    assert not finished(events, "shout_nr").is_error
