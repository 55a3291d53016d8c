"""Real turns through litellm against the local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json

from openprogram.agent.context import QuestionRequest, get_turn
from openprogram.agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    HistoryMessage,
    QuestionAsked,
    TextDelta,
    TodoUpdated,
    ToolCallStarted,
    ToolFinished,
    ToolsResolved,
    ToolUpdate,
    TurnError,
    TurnFinished,
    TurnRequest,
)
from openprogram.agent.types import ApprovalDecision, ApprovalRequest
from openprogram.programs.decorator import function
from tests.component.agent import tools_for_tests as tools
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY, of_type, run_turn
from tests.fakes.openai_server import error_reply, text_reply, tool_calls_reply


def _tool_names(request_body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request_body.get("tools", [])]


async def test_it_runs_a_single_tool_call_and_feeds_the_result_back(fake_openai, empty_registry):
    tools.register_echo()
    fake_openai.script(tool_calls_reply(("echo", {"text": "hi"})), text_reply("It said hi."))

    events = await run_turn(TurnRequest(text="say hi", model=FAKE_MODEL))

    assert of_type(events, ToolsResolved)[0].tools == ["echo"]
    started = of_type(events, ToolCallStarted)
    assert [(s.name, s.arguments) for s in started] == [("echo", {"text": "hi"})]
    finished = of_type(events, ToolFinished)
    assert [(f.preview, f.is_error) for f in finished] == [("echo: hi", False)]
    assert finished[0].call_id == started[0].call_id
    assert "".join(d.text for d in of_type(events, TextDelta)) == "It said hi."
    end = events[-1]
    assert isinstance(end, TurnFinished)
    assert (end.stop_reason, end.text, end.steps) == ("completed", "It said hi.", 2)
    usage = end.usage
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens"] > 0
    assert _tool_names(fake_openai.requests[0]) == ["echo"]
    second = fake_openai.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "echo",
        "arguments": '{"text": "hi"}',
    }
    assert second[-1] == {
        "role": "tool",
        "content": "echo: hi",
        "tool_call_id": second[-2]["tool_calls"][0]["id"],
        "name": "echo",
    }


async def test_it_runs_parallel_tool_calls_concurrently(fake_openai, empty_registry):
    tools.register_rendezvous(parties=2)
    fake_openai.script(
        tool_calls_reply(("rendezvous", {"name": "a"}), ("rendezvous", {"name": "b"})),
        text_reply("both met"),
    )

    events = await run_turn(TurnRequest(text="meet", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)
    assert sorted(f.preview for f in finished) == ["a met 1 others", "b met 1 others"]
    assert events[-1].stop_reason == "completed"
    tool_messages = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 2


async def test_a_deferred_tool_loaded_by_tool_search_ships_its_schema_next_request(
    fake_openai, empty_registry
):
    tools.register_echo()
    tools.register_deferred_cron()
    fake_openai.script(
        tool_calls_reply(("tool_search", {"query": "select:cron_schedule"})),
        tool_calls_reply(("cron_schedule", {"when": "0 5 * * *"})),
        text_reply("scheduled"),
    )

    events = await run_turn(TurnRequest(text="schedule it", model=FAKE_MODEL))

    resolved = of_type(events, ToolsResolved)[0]
    assert resolved.deferred == ["cron_schedule"]
    assert "cron_schedule" not in resolved.tools
    first, second, _ = fake_openai.requests
    assert "cron_schedule" not in _tool_names(first)
    assert "- cron_schedule: Schedule a job" in first["messages"][0]["content"]
    loaded = next(t for t in second["tools"] if t["function"]["name"] == "cron_schedule")
    assert "when" in loaded["function"]["parameters"]["properties"]
    finished = of_type(events, ToolFinished)
    assert [f.name for f in finished] == ["tool_search", "cron_schedule"]
    assert finished[1].preview == "scheduled at 0 5 * * *"


async def test_a_deferred_tool_called_before_tool_search_is_loaded_and_run(
    fake_openai, empty_registry
):
    tools.register_deferred_cron()
    fake_openai.script(tool_calls_reply(("cron_schedule", {"when": "daily"})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="schedule", model=FAKE_MODEL))

    assert [(f.preview, f.is_error) for f in of_type(events, ToolFinished)] == [
        ("scheduled at daily", False)
    ]
    assert "cron_schedule" in _tool_names(fake_openai.requests[1])


async def test_malformed_json_arguments_go_back_to_the_model_as_an_error(
    fake_openai, empty_registry
):
    tools.register_echo()
    fake_openai.script(tool_calls_reply(("echo", '{"text": "hi"')), text_reply("sorry"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert "not valid JSON" in finished.preview
    assert of_type(events, ToolCallStarted)[0].arguments == '{"text": "hi"'
    tool_message = fake_openai.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"].startswith("Error: arguments for 'echo' are not valid JSON")
    assert events[-1].stop_reason == "completed"


async def test_a_tool_that_keeps_failing_validation_ends_the_turn_readably(
    fake_openai, empty_registry
):
    tools.register_add()
    fake_openai.respond_with(lambda body: tool_calls_reply(("add", {"a": "one", "b": 2})))

    events = await run_turn(TurnRequest(text="add", model=FAKE_MODEL))

    error = of_type(events, TurnError)[0]
    assert error.kind == "tool_arguments"
    assert "'add' got invalid arguments 3 times in a row" in error.message
    assert "at 'a':" in error.message
    assert events[-1].stop_reason == "error"
    assert len(fake_openai.requests) == 3


async def test_an_unknown_tool_name_is_answered_with_the_offered_list(fake_openai, empty_registry):
    tools.register_echo()
    fake_openai.script(tool_calls_reply(("launch_rockets", {})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert finished.preview == "tool 'launch_rockets' is not offered in this turn; offered: echo"
    assert events[-1].stop_reason == "completed"


async def test_a_tool_timeout_becomes_an_error_result(fake_openai, empty_registry):
    tools.register_slow(timeout=0.1)
    fake_openai.script(tool_calls_reply(("slow", {})), text_reply("it was slow"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert "timed out" in finished.preview
    assert events[-1].stop_reason == "completed"


async def test_a_denied_approval_skips_the_tool_and_says_why(fake_openai, empty_registry):
    deleted: list[str] = []
    tools.register_guarded_delete(deleted)
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="not today")

    fake_openai.script(tool_calls_reply(("delete_note", {"title": "plans"})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, approval_hook=approver))

    assert [(r.tool_name, r.arguments) for r in asked] == [("delete_note", {"title": "plans"})]
    requested = of_type(events, ApprovalRequested)[0]
    assert (requested.name, requested.arguments) == ("delete_note", {"title": "plans"})
    resolved = of_type(events, ApprovalResolved)[0]
    assert (resolved.approved, resolved.reason) == (False, "not today")
    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert "not today" in finished.preview
    assert deleted == []


async def test_an_unattended_turn_denies_approval_without_asking(fake_openai, empty_registry):
    deleted: list[str] = []
    tools.register_guarded_delete(deleted)

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        raise AssertionError("an unattended turn must not ask anyone")

    fake_openai.script(tool_calls_reply(("delete_note", {"title": "x"})), text_reply("ok"))

    events = await run_turn(
        TurnRequest(text="x", model=FAKE_MODEL, attended=False, approval_hook=approver)
    )

    assert of_type(events, ApprovalResolved)[0].approved is False
    assert "nobody is attending" in of_type(events, ApprovalResolved)[0].reason
    assert deleted == []


async def test_an_approval_that_times_out_is_denied(fake_openai, empty_registry):
    deleted: list[str] = []
    tools.register_guarded_delete(deleted)

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    fake_openai.script(tool_calls_reply(("delete_note", {"title": "x"})), text_reply("ok"))

    events = await run_turn(
        TurnRequest(text="x", model=FAKE_MODEL, approval_hook=approver, approval_timeout=0.05)
    )

    resolved = of_type(events, ApprovalResolved)[0]
    assert resolved.approved is False
    assert "within 0.05 s" in resolved.reason
    assert deleted == []


async def test_stop_mid_tool_ends_the_turn_promptly_and_keeps_partial_text(
    fake_openai, empty_registry
):
    tools.register_waits_for_stop(on_start=lambda: None)
    fake_openai.script(tool_calls_reply(("wait_for_stop", {}), text="Working on it."))
    request = TurnRequest(text="x", model=FAKE_MODEL)
    from openprogram.agent.dispatcher import process_user_turn

    events = []

    async def drive() -> None:
        async for event in process_user_turn(request, retry=FAST_RETRY):
            events.append(event)
            if isinstance(event, ToolUpdate) and event.text == "started":
                request.cancel.set()

    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(drive(), 60)

    assert loop.time() - started < 30  # the tool would run forever: Stop ended it
    end = events[-1]
    assert (end.stop_reason, end.text) == ("stopped", "Working on it.")
    finished = of_type(events, ToolFinished)
    assert [(f.name, f.is_error) for f in finished] == [("wait_for_stop", True)]
    assert len(fake_openai.requests) == 1


async def test_the_step_limit_ends_a_model_that_never_stops_calling_tools(
    fake_openai, empty_registry
):
    tools.register_echo()
    fake_openai.respond_with(lambda body: tool_calls_reply(("echo", {"text": "again"})))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, max_steps=3))

    end = events[-1]
    assert (end.stop_reason, end.steps) == ("step_limit", 3)
    assert "step limit" in of_type(events, TurnError)[0].message
    assert len(fake_openai.requests) == 3
    assert len(of_type(events, ToolFinished)) == 3


async def test_a_provider_500_is_retried_then_succeeds(fake_openai, empty_registry):
    fake_openai.script(error_reply(500), error_reply(503), text_reply("recovered"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    assert of_type(events, TurnError) == []
    assert (events[-1].stop_reason, events[-1].text) == ("completed", "recovered")
    assert len(fake_openai.requests) == 3


async def test_a_provider_that_keeps_failing_is_reported_as_unavailable(
    fake_openai, empty_registry
):
    fake_openai.respond_with(lambda body: error_reply(429, "slow down"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    error = of_type(events, TurnError)[0]
    assert error.kind == "provider_unavailable"
    assert f"after {FAST_RETRY.attempts} attempts" in error.message
    assert events[-1].stop_reason == "error"
    assert len(fake_openai.requests) == FAST_RETRY.attempts


async def test_a_provider_401_is_reported_at_once_with_its_message(fake_openai, empty_registry):
    fake_openai.script(error_reply(401, "Incorrect API key provided: test"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    error = of_type(events, TurnError)[0]
    assert error.kind == "provider_auth"
    assert "Incorrect API key provided" in error.message
    assert "'openai/fake-model'" in error.message
    assert events[-1].stop_reason == "error"
    assert len(fake_openai.requests) == 1


async def test_a_refused_connection_is_reported_as_unavailable(
    fake_openai, empty_registry, monkeypatch
):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    monkeypatch.setenv("OPENPROGRAM_API_BASE", f"http://127.0.0.1:{closed_port}/v1")

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    assert of_type(events, TurnError)[0].kind == "provider_unavailable"
    assert events[-1].stop_reason == "error"


async def test_earlier_tool_results_never_enter_the_next_prompt(fake_openai, empty_registry):
    tools.register_echo()
    fake_openai.script(
        tool_calls_reply(("echo", {"text": "SECRET-42"})),
        text_reply("Done echoing."),
        text_reply("Second answer."),
    )
    first = await run_turn(TurnRequest(text="echo the secret", model=FAKE_MODEL))
    history = [
        HistoryMessage(role="user", content="echo the secret"),
        HistoryMessage(role="assistant", content=first[-1].text),
    ]

    await run_turn(TurnRequest(text="and now?", history=history, model=FAKE_MODEL))

    assert "echo: SECRET-42" in json.dumps(fake_openai.requests[1]["messages"])
    later = fake_openai.requests[2]["messages"]
    assert [m["role"] for m in later] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in later[1:]] == ["echo the secret", "Done echoing.", "and now?"]
    assert "echo: SECRET-42" not in json.dumps(later)


async def test_tools_off_sends_no_tools_and_web_search_off_denies_it(fake_openai, empty_registry):
    tools.register_echo()

    @function
    def web_search(query: str) -> str:
        """Search the web."""
        return query

    fake_openai.script(text_reply("a"), text_reply("b"))

    off = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, tools_on=False))
    no_web = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, web_search_on=False))

    assert of_type(off, ToolsResolved)[0].tools == []
    assert "tools" not in fake_openai.requests[0]
    assert of_type(no_web, ToolsResolved)[0].tools == ["echo"]
    assert _tool_names(fake_openai.requests[1]) == ["echo"]


async def test_an_unknown_toolset_ends_the_turn_with_an_error_event(fake_openai, empty_registry):
    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, toolset="no-such-set"))

    assert [type(e) for e in events] == [TurnError, TurnFinished]
    assert events[0].kind == "tools"
    assert "no-such-set" in events[0].message
    assert events[-1].stop_reason == "error"
    assert fake_openai.requests == []


async def test_big_results_are_capped_by_the_models_context_window(fake_openai, empty_registry):
    @function(max_result_chars=1_000_000)
    def dump() -> str:
        """Return a lot of text."""
        return "x" * 300_000

    fake_openai.script(tool_calls_reply(("dump", {})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)[0]
    assert finished.truncated
    assert finished.full_result_path
    assert len(finished.preview) == 2_000
    sent = fake_openai.requests[1]["messages"][-1]["content"]
    # Unknown model → 32,000-token fallback → 128,000 chars → 30 % share.
    assert len(sent) < 0.3 * 128_000 + 500


async def test_tools_can_push_events_and_ask_questions_through_the_turn(
    fake_openai, empty_registry
):
    @function
    async def plan_and_ask() -> str:
        """Update the todo list, then ask the user."""
        turn = get_turn()
        await turn.emit(TodoUpdated(todos=[{"content": "step 1", "status": "pending"}]))
        answer = await turn.question_hook(QuestionRequest(call_id="q1", question="Which one?"))
        return f"user chose {answer}"

    async def answer(question: QuestionRequest) -> str:
        return "the blue one"

    fake_openai.script(tool_calls_reply(("plan_and_ask", {})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL, question_hook=answer))

    kinds = [type(e).__name__ for e in events]
    assert kinds.index("TodoUpdated") < kinds.index("QuestionAsked") < kinds.index("ToolFinished")
    assert of_type(events, QuestionAsked)[0].question == "Which one?"
    assert of_type(events, ToolFinished)[0].preview == "user chose the blue one"


async def test_an_unanswered_question_becomes_an_error_result(fake_openai, empty_registry):
    @function
    async def ask() -> str:
        """Ask the user."""
        return await get_turn().question_hook(QuestionRequest(call_id="q", question="?"))

    fake_openai.script(tool_calls_reply(("ask", {})), text_reply("ok"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert "nobody is attending" in finished.preview


async def test_a_tool_that_raises_or_returns_garbage_never_takes_the_turn_down(
    fake_openai, empty_registry
):
    from openprogram.agent.types import AgentTool
    from openprogram.programs.registry import register

    class Exploding(AgentTool):
        async def execute(self, call_id, args, cancel=None, on_update=None):
            raise RuntimeError("boom")

    class Garbage(AgentTool):
        async def execute(self, call_id, args, cancel=None, on_update=None):
            return {"not": "a result"}

    register(Exploding(name="explode", description="Raises."))
    register(Garbage(name="garbage", description="Returns a dict."))
    fake_openai.script(tool_calls_reply(("explode", {}), ("garbage", {})), text_reply("coped"))

    events = await run_turn(TurnRequest(text="x", model=FAKE_MODEL))

    previews = {f.name: (f.is_error, f.preview) for f in of_type(events, ToolFinished)}
    assert previews == {
        "explode": (True, "tool 'explode' failed: RuntimeError: boom"),
        "garbage": (True, "tool 'garbage' returned 'dict', not a result"),
    }
    assert (events[-1].stop_reason, events[-1].text) == ("completed", "coped")


async def test_closing_the_event_stream_early_stops_the_turn(fake_openai, empty_registry):
    from openprogram.agent.dispatcher import process_user_turn

    tools.register_waits_for_stop(on_start=lambda: None)
    fake_openai.script(tool_calls_reply(("wait_for_stop", {})))
    request = TurnRequest(text="x", model=FAKE_MODEL)
    stream = process_user_turn(request, retry=FAST_RETRY)

    async for event in stream:
        if isinstance(event, ToolUpdate):
            break
    await asyncio.wait_for(stream.aclose(), 5)

    assert request.cancel.is_set()


async def test_stop_while_the_model_streams_keeps_the_text_so_far(fake_openai, empty_registry):
    from openprogram.agent.dispatcher import process_user_turn
    from tests.fakes.openai_server import FakeReply

    fake_openai.script(FakeReply(text="partial answer", hang=True))
    request = TurnRequest(text="x", model=FAKE_MODEL)
    events = []

    async def drive() -> None:
        async for event in process_user_turn(request, retry=FAST_RETRY):
            events.append(event)
            if "".join(d.text for d in of_type(events, TextDelta)) == "partial answer":
                request.cancel.set()

    await asyncio.wait_for(drive(), 10)
    fake_openai.release()

    assert (events[-1].stop_reason, events[-1].text) == ("stopped", "partial answer")


async def test_a_blank_model_name_is_a_clear_error_not_an_exception(empty_registry):
    events = await run_turn(TurnRequest(text="x", model="  "))

    assert [type(e) for e in events] == [ToolsResolved, TurnError, TurnFinished]
    assert events[1].kind == "provider_bad_request"
    assert "a model name is required" in events[1].message
