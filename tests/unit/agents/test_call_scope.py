"""Every Agent method call enters a scope: call tree, cancellation, runtime, restoration."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openprogram import Agent
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agentic_programming import (
    MAX_CALL_DEPTH,
    CallCancelled,
    CallDepthError,
    CancelToken,
    context,
    current_call_tree,
)
from openprogram.agentic_programming.call_state import ToolCallSite, current_tool_call_site
from openprogram.agentic_programming.context import current_context


class Pipeline(Agent):
    def run(self, text: str) -> dict:
        cleaned = self._clean(text)
        self._count(cleaned)
        return {"tree": current_call_tree(), "cleaned": cleaned}

    def _clean(self, text: str) -> str:
        return text.strip().lower()

    def _count(self, text: str) -> int:
        return len(text)

    def fail(self) -> None:
        self._explode("boom")

    def _explode(self, why: str) -> None:
        raise ValueError(why)

    def cancel_then_call(self) -> str:
        context().cancel("user pressed stop")
        return self._clean("never")

    async def arun_steps(self, n: int) -> list[str]:
        return [await self._astep(i) for i in range(n)]

    async def _astep(self, i: int) -> str:
        return f"{context().node.method}:{i}:{context().parent.node.method}"

    def recurse(self, depth: int) -> int:
        return self.recurse(depth + 1)

    def which_model(self) -> str:
        return self.runtime.model


def test_nested_calls_form_a_tree_with_inputs_outputs_and_timings():
    result = Pipeline().run("  Hello ")
    nodes = {n.method: n for n in result["tree"].nodes()}
    root = nodes["Pipeline.run"]
    clean, count = nodes["Pipeline._clean"], nodes["Pipeline._count"]
    assert root.parent_id is None and root.children == [clean.id, count.id]
    assert clean.parent_id == root.id and count.parent_id == root.id
    assert clean.inputs == {"text": "  Hello "} and clean.output == "hello"
    assert (clean.status, count.status, count.output) == ("ok", "ok", 5)
    assert root.status == "ok" and root.finished_at >= clean.finished_at >= clean.started_at
    assert root.to_dict()["duration_ms"] >= 0


def test_an_exception_marks_the_scope_failed_and_restores_the_context_stack():
    agent = Pipeline()
    sentinel_site = ToolCallSite("c0", "someone_elses_tool", CancelToken(), None)
    site_token = current_tool_call_site.set(sentinel_site)
    try:
        with pytest.raises(ValueError, match="boom"):
            agent.fail()
        assert current_context.get() is None
        assert current_tool_call_site.get() is sentinel_site
        assert not sentinel_site.claimed
    finally:
        current_tool_call_site.reset(site_token)


def test_a_failed_nested_call_is_recorded_as_error_up_the_tree():
    agent = Pipeline()
    trees = []

    class Watcher(Pipeline):
        def fail(self) -> None:
            trees.append(current_call_tree())
            super().fail()

    with pytest.raises(ValueError):
        Watcher().fail()
    statuses = {n.method: (n.status, n.error) for n in trees[0].nodes()}
    assert statuses["Pipeline._explode"] == ("error", "ValueError: boom")
    assert statuses["Watcher.fail"][0] == "error"
    assert agent.run("ok")["cleaned"] == "ok"  # the next call starts a fresh tree


def test_a_call_nested_in_a_cancelled_scope_never_starts():
    trees = []

    class Stopper(Pipeline):
        def cancel_then_call(self) -> str:
            trees.append(current_call_tree())
            return super().cancel_then_call()

    with pytest.raises(CallCancelled, match="user pressed stop"):
        Stopper().cancel_then_call()
    (node,) = [n for n in trees[0].nodes() if n.method == "Stopper.cancel_then_call"]
    assert node.status == "cancelled"
    assert [n.method for n in trees[0].nodes()] == [
        "Stopper.cancel_then_call",
        "Pipeline.cancel_then_call",
    ]


def test_cancelling_a_token_cascades_to_children_and_runs_hooks_once():
    parent = CancelToken()
    child = parent.child()
    grandchild = child.child()
    seen: list[str] = []
    grandchild.on_cancel(seen.append)
    parent.cancel("stop")
    parent.cancel("again")
    assert (child.cancelled, grandchild.cancelled, seen) == (True, True, ["stop"])
    late: list[str] = []
    grandchild.on_cancel(late.append)
    assert late == ["stop"]


def test_a_detached_token_no_longer_follows_its_parent():
    parent = CancelToken()
    child = parent.child()
    child.detach()
    parent.cancel()
    assert not child.cancelled


async def test_a_token_sets_an_asyncio_event_from_another_thread():
    token = CancelToken()
    event = asyncio.Event()
    token.link_event(event, asyncio.get_running_loop())
    threading.Thread(target=token.cancel).start()
    await asyncio.wait_for(event.wait(), 5)


async def test_async_methods_enter_scopes_too():
    steps = await Pipeline().arun_steps(2)
    assert steps == [
        "Pipeline._astep:0:Pipeline.arun_steps",
        "Pipeline._astep:1:Pipeline.arun_steps",
    ]
    assert context() is None


async def test_concurrent_calls_keep_separate_scopes():
    agent = Pipeline()
    first, second = await asyncio.gather(agent.arun_steps(3), agent.arun_steps(1))
    assert len(first) == 3 and len(second) == 1


def test_runaway_recursion_stops_at_the_depth_limit_and_unwinds_cleanly():
    with pytest.raises(CallDepthError, match=str(MAX_CALL_DEPTH)):
        Pipeline().recurse(0)
    assert current_context.get() is None


def test_runtime_model_defaults_to_offline():
    assert Pipeline().which_model() == "offline"


def test_runtime_model_comes_from_the_current_turn():
    token = current_turn.set(TurnContext(model="openai/gpt-4o-mini"))
    try:
        assert Pipeline().which_model() == "openai/gpt-4o-mini"
    finally:
        current_turn.reset(token)


def test_runtime_model_of_the_agent_wins_over_the_turn():
    token = current_turn.set(TurnContext(model="openai/gpt-4o-mini"))
    try:
        assert Pipeline(model="ollama/llama3").which_model() == "ollama/llama3"
        assert Pipeline(model="ollama/llama3").runtime.turn.model == "openai/gpt-4o-mini"
    finally:
        current_turn.reset(token)


def test_calling_the_agent_on_a_running_loop_says_to_use_arun():
    agent = Pipeline()

    async def inside() -> None:
        agent("hello")

    with pytest.raises(RuntimeError, match=r"await self\.arun"):
        asyncio.run(inside())


async def test_an_empty_prompt_is_refused():
    with pytest.raises(ValueError, match="non-empty prompt"):
        await Pipeline().arun("  ")


def test_on_cancel_hooks_do_not_fire_when_a_call_simply_finishes():
    fired: list[str] = []

    class Tidy(Agent):
        def work(self) -> str:
            context().on_cancel(fired.append)
            return "done"

    assert Tidy().work() == "done"
    assert fired == []


def test_cancelling_an_outer_call_runs_the_hooks_of_the_calls_nested_in_it():
    fired: list[str] = []

    class Outer(Agent):
        def outer(self) -> None:
            self.inner()

        def inner(self) -> None:
            context().on_cancel(fired.append)
            context().parent.cancel("outer stopped")
            context().raise_if_cancelled()

    with pytest.raises(CallCancelled, match="outer stopped"):
        Outer().outer()
    assert fired == ["outer stopped"]
