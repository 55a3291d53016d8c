"""AgentTool.execute on @function tools: dispatch, errors, streaming, cancel, timeout."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from openprogram import AgentToolResult, ToolReturn
from openprogram.programs.decorator import build_function_tool


async def test_a_sync_tool_runs_and_its_return_value_becomes_the_content():
    def add(a: int, b: int = 2) -> int:
        """Add."""
        return a + b

    result = await build_function_tool(add).execute("c1", '{"a": 40}')
    assert (result.content, result.is_error, result.details) == ("42", False, 42)
    assert result.duration_ms > 0


async def test_an_async_tool_is_awaited():
    async def greet(name: str) -> str:
        """Greet."""
        await asyncio.sleep(0)
        return f"hello {name}"

    result = await build_function_tool(greet).execute("c1", {"name": "alice"})
    assert result.content == "hello alice" and not result.is_error


async def test_a_sync_tool_runs_off_the_event_loop():
    started, gate = threading.Event(), threading.Event()

    def blocker() -> str:
        """Block until the loop releases it."""
        started.set()
        return "released" if gate.wait(5) else "the loop was blocked"

    call = asyncio.ensure_future(build_function_tool(blocker).execute("c1", {}))
    assert await asyncio.to_thread(started.wait, 5)
    gate.set()  # only reachable while the body blocks if the loop is free
    assert (await call).content == "released"


async def test_an_exception_becomes_an_error_result_without_traceback(caplog):
    def explode(path: str) -> str:
        """Fail."""
        raise FileNotFoundError(f"no such file {path!r}")

    with caplog.at_level(logging.ERROR):
        result = await build_function_tool(explode).execute("c1", {"path": "x.txt"})
    assert result.is_error
    assert result.content == "FileNotFoundError: no such file 'x.txt'"
    assert "Traceback" not in result.content
    assert "explode" in caplog.text and caplog.records[-1].exc_info is not None


async def test_invalid_arguments_name_the_field_and_the_body_never_runs():
    calls = []

    def resize(width: int, height: int) -> str:
        """Resize."""
        calls.append((width, height))
        return "ok"

    tool = build_function_tool(resize)
    result = await tool.execute("c1", {"width": "wide", "depth": 3})
    assert result.is_error
    assert "field 'width'" in result.content and "integer" in result.content
    assert "missing required field 'height'" in result.content
    assert "unexpected field 'depth'" in result.content
    assert calls == []


async def test_malformed_json_arguments_are_an_error_that_says_so():
    def noop(x: int) -> int:
        """Noop."""
        return x

    tool = build_function_tool(noop)
    result = await tool.execute("c1", '{"x": 1')
    assert result.is_error and "Invalid JSON arguments for 'noop'" in result.content
    not_object = await tool.execute("c2", "[1, 2]")
    assert not_object.is_error and "must be a JSON object" in not_object.content


async def test_tool_return_text_goes_to_the_model_and_data_to_details():
    def stats() -> ToolReturn:
        """Stats."""
        return ToolReturn(text="3 files", data={"files": 3})

    result = await build_function_tool(stats).execute("c1", {})
    assert (result.content, result.details) == ("3 files", {"files": 3})


async def test_a_long_result_is_capped_and_persisted():
    def dump() -> str:
        """Dump."""
        return "a" * 3_000 + "b" * 3_000

    result = await build_function_tool(dump, max_result_chars=1_000).execute("c9", {})
    assert result.truncated and len(result.content) <= 1_000
    assert result.dropped_chars > 5_000 - 1_000
    with open(result.full_result_path) as handle:
        assert handle.read() == "a" * 3_000 + "b" * 3_000


async def test_the_cancel_event_reaches_an_async_body_and_the_call_ends_promptly():
    started = asyncio.Event()
    saw_cancel = asyncio.Event()

    async def wait_forever(cancel) -> str:
        """Wait."""
        started.set()
        await cancel.wait()
        saw_cancel.set()
        await asyncio.sleep(3600)
        return "never"

    cancel = asyncio.Event()
    call = asyncio.ensure_future(build_function_tool(wait_forever).execute("c1", {}, cancel))
    await asyncio.wait_for(started.wait(), 30)
    began = time.perf_counter()
    cancel.set()
    result = await asyncio.wait_for(call, 60)
    assert result.is_error and "was cancelled" in result.content
    # The body would hold the call for an hour; it ends after the short cancel grace.
    assert time.perf_counter() - began < 30
    assert saw_cancel.is_set()


async def test_a_sync_body_gets_a_thread_event_set_on_cancel():
    started, noticed = threading.Event(), threading.Event()

    def poll(cancel) -> str:
        """Poll."""
        started.set()
        while not cancel.wait(0.01):
            pass
        noticed.set()
        return "stopped"

    cancel = asyncio.Event()
    call = asyncio.ensure_future(build_function_tool(poll).execute("c1", {}, cancel))
    assert await asyncio.to_thread(started.wait, 5)
    cancel.set()
    result = await asyncio.wait_for(call, 5)
    assert "was cancelled" in result.content
    assert await asyncio.to_thread(noticed.wait, 5)


async def test_a_timeout_ends_the_call_with_an_error_and_sets_the_cancel_event():
    async def hang(on_update) -> str:
        """Hang."""
        on_update("partial")
        await asyncio.sleep(3600)
        return "never"

    cancel = asyncio.Event()
    result = await build_function_tool(hang, timeout=0.1).execute("c1", {}, cancel)
    assert result.is_error
    assert "timed out after 0.1 s" in result.content and "partial" in result.content
    assert cancel.is_set()


async def test_the_llm_timeout_is_clamped_and_passed_to_the_body():
    def report(timeout: float) -> float:
        """Report the budget."""
        return timeout

    tool = build_function_tool(report, timeout=2, timeout_min=0.5, timeout_max=4)
    assert "timeout" in tool.parameters["properties"]
    assert (await tool.execute("c1", {"timeout": 100})).content == "4.0"
    assert (await tool.execute("c2", {"timeout": 0.01})).content == "0.5"
    assert (await tool.execute("c3", {})).content == "2.0"


async def test_the_clamped_timeout_is_also_the_wait_budget():
    async def sleepy(timeout: float) -> str:
        """Sleep past the budget."""
        await asyncio.sleep(3600)
        return "never"

    tool = build_function_tool(sleepy, timeout=30, timeout_min=0.05, timeout_max=0.1)
    result = await tool.execute("c1", {"timeout": 999})
    assert result.is_error and "timed out after 0.1 s" in result.content


async def test_a_static_timeout_is_injected_but_not_offered_to_the_model():
    def report(timeout: float = 1.0) -> float:
        """Report."""
        return timeout

    tool = build_function_tool(report, timeout=7)
    assert "timeout" not in tool.parameters["properties"]
    assert (await tool.execute("c1", {})).content == "7.0"
    refused = await tool.execute("c2", {"timeout": 1})
    assert refused.is_error and "unexpected field 'timeout'" in refused.content


async def test_a_bound_method_runs_without_self_in_the_schema():
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def bump(self, by: int) -> int:
            """Bump the counter."""
            self.total += by
            return self.total

    counter = Counter()
    tool = build_function_tool(counter.bump)
    assert list(tool.parameters["properties"]) == ["by"]
    assert (await tool.execute("c1", {"by": 3})).content == "3"
    assert counter.total == 3


async def test_a_kwargs_body_is_validated_against_its_explicit_schema():
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }

    def weather(**kwargs) -> str:
        """Weather."""
        return f"sunny in {kwargs['city']}"

    tool = build_function_tool(weather, parameters=schema)
    assert tool.parameters is schema
    assert (await tool.execute("c1", {"city": "Oslo"})).content == "sunny in Oslo"
    bad = await tool.execute("c2", {"city": 3})
    assert bad.is_error and "field 'city'" in bad.content


async def test_a_returned_agent_tool_result_keeps_its_error_flag():
    def soft_fail() -> AgentToolResult:
        """Fail softly."""
        return AgentToolResult(content="nothing matched", is_error=True)

    result = await build_function_tool(soft_fail).execute("c1", {})
    assert (result.content, result.is_error) == ("nothing matched", True)


@pytest.mark.parametrize("raw", ["", "{}", {}])
async def test_empty_arguments_mean_no_arguments(raw):
    def ping() -> str:
        """Ping."""
        return "pong"

    assert (await build_function_tool(ping).execute("c1", raw)).content == "pong"


async def test_cancelling_execute_itself_tells_a_sync_body_to_stop():
    started, noticed = threading.Event(), threading.Event()

    def poll(cancel) -> str:
        """Poll."""
        started.set()
        while not cancel.wait(0.01):
            pass
        noticed.set()
        return "stopped"

    call = asyncio.ensure_future(build_function_tool(poll).execute("c1", {}))
    assert await asyncio.to_thread(started.wait, 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(noticed.wait, 5)


async def test_a_body_that_finishes_within_its_budget_is_not_cut_short():
    async def quick(cancel) -> str:
        """Quick."""
        return "cancel seen" if cancel.is_set() else "done"

    cancel = asyncio.Event()
    result = await build_function_tool(quick, timeout=30).execute("c1", {}, cancel)
    assert (result.content, result.is_error, cancel.is_set()) == ("done", False, False)


async def test_a_sync_body_sees_the_current_turn():
    from openprogram.agent.context import TurnContext, current_turn, get_turn

    def whoami() -> str:
        """Who am I."""
        turn = get_turn()
        return str(turn.user_id) if turn else "nobody"

    token = current_turn.set(TurnContext(user_id="alice"))
    try:
        result = await build_function_tool(whoami).execute("c1", {})
    finally:
        current_turn.reset(token)
    assert result.content == "alice"


async def test_a_required_timeout_parameter_gets_none_without_any_budget():
    def report(timeout: float | None) -> str:
        """Report."""
        return repr(timeout)

    assert (await build_function_tool(report).execute("c1", {})).content == "None"


async def test_cancelling_execute_under_a_budget_cancels_an_async_body():
    started, unwound = asyncio.Event(), asyncio.Event()

    async def wait_long() -> str:
        """Wait long."""
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            unwound.set()
        return "never"

    call = asyncio.ensure_future(build_function_tool(wait_long, timeout=60).execute("c1", {}))
    await asyncio.wait_for(started.wait(), 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert unwound.is_set()


@pytest.mark.parametrize("budget", [None, 30])
async def test_sys_exit_in_a_body_is_an_error_result_not_a_server_exit(budget):
    def quitter() -> str:
        """Quit."""
        raise SystemExit(3)

    async def async_quitter() -> str:
        """Quit asynchronously."""
        raise SystemExit(4)

    sync_result = await build_function_tool(quitter, timeout=budget).execute("c1", {})
    async_result = await build_function_tool(async_quitter, timeout=budget).execute("c2", {})
    assert (sync_result.is_error, sync_result.content) == (True, "SystemExit: 3")
    assert (async_result.is_error, async_result.content) == (True, "SystemExit: 4")
