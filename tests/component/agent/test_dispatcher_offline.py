"""The same turns with the offline model: a litellm custom provider, no network."""

from __future__ import annotations

import asyncio

from openprogram.agent.events import (
    ApprovalResolved,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
    ToolsResolved,
    ToolUpdate,
    TurnRequest,
)
from openprogram.agent.types import ApprovalDecision, ApprovalRequest
from tests.component.agent import tools_for_tests as tools
from tests.component.agent.conftest import FAST_RETRY, of_type, run_turn


def _text(events) -> str:
    return "".join(delta.text for delta in of_type(events, TextDelta))


async def test_a_plain_message_gets_a_streamed_list_of_the_offered_tools(empty_registry):
    tools.register_echo()
    tools.register_add()
    tools.register_deferred_cron()

    events = await run_turn(TurnRequest(text="hello", model="offline"))

    text = _text(events)
    assert "Tools offered this turn: echo, add, tool_search." in text
    assert "Deferred (loaded on demand with tool_search): cron_schedule." in text
    assert len(of_type(events, TextDelta)) > 3
    assert events[-1].stop_reason == "completed"
    assert events[-1].text == text
    assert events[-1].usage["total_tokens"] > 0


async def test_a_slash_command_calls_the_tool_and_summarises_the_result(empty_registry):
    tools.register_echo()

    events = await run_turn(TurnRequest(text="/echo text=hi", model="offline"))

    assert [(s.name, s.arguments) for s in of_type(events, ToolCallStarted)] == [
        ("echo", {"text": "hi"})
    ]
    assert _text(events) == "Results of 1 tool call:\n- echo: ok — echo: hi"
    assert (events[-1].stop_reason, events[-1].steps) == ("completed", 2)


async def test_free_text_after_the_name_fills_the_first_string_parameter(empty_registry):
    tools.register_echo()

    events = await run_turn(TurnRequest(text="/echo hello there", model="offline"))

    assert of_type(events, ToolCallStarted)[0].arguments == {"text": "hello there"}


async def test_json_arguments_and_several_commands_run_in_parallel(empty_registry):
    tools.register_rendezvous(parties=2)

    events = await run_turn(
        TurnRequest(text='/rendezvous {"name": "a"}\n/rendezvous {"name": "b"}', model="offline")
    )

    finished = of_type(events, ToolFinished)
    assert sorted(f.preview for f in finished) == ["a met 1 others", "b met 1 others"]
    assert "Results of 2 tool calls:" in _text(events)


async def test_a_deferred_tool_is_loaded_through_tool_search_first(empty_registry):
    tools.register_deferred_cron()

    events = await run_turn(TurnRequest(text="/cron_schedule when=daily", model="offline"))

    started = of_type(events, ToolCallStarted)
    assert [(s.name, s.arguments) for s in started] == [
        ("tool_search", {"query": "select:cron_schedule"}),
        ("cron_schedule", {"when": "daily"}),
    ]
    assert "- cron_schedule: ok — scheduled at daily" in _text(events)
    assert events[-1].steps == 3


async def test_a_tool_that_is_not_offered_gets_a_clear_reply(empty_registry):
    tools.register_echo()

    events = await run_turn(TurnRequest(text="/launch_rockets", model="offline"))

    assert of_type(events, ToolCallStarted) == []
    assert _text(events) == (
        "The tool 'launch_rockets' is not offered in this turn. Tools offered this turn: echo."
    )


async def test_a_tool_vetoed_by_the_profile_is_not_offered(empty_registry):
    tools.register_echo()
    tools.register_add()

    events = await run_turn(
        TurnRequest(text="/add a=1 b=2", model="offline", profile_tools=["echo"])
    )

    assert of_type(events, ToolsResolved)[0].tools == ["echo"]
    assert of_type(events, ToolCallStarted) == []
    assert "'add' is not offered" in _text(events)


async def test_malformed_json_is_reported_as_an_error_result(empty_registry):
    tools.register_echo()

    events = await run_turn(TurnRequest(text='/echo {"text": ', model="offline"))

    finished = of_type(events, ToolFinished)[0]
    assert finished.is_error
    assert "not valid JSON" in finished.preview
    assert "- echo: error — Error: arguments for 'echo' are not valid JSON" in _text(events)


async def test_a_tool_timeout_is_summarised_as_an_error(empty_registry):
    tools.register_slow(timeout=0.1)

    events = await run_turn(TurnRequest(text="/slow", model="offline"))

    assert of_type(events, ToolFinished)[0].is_error
    assert "- slow: error" in _text(events)


async def test_a_denied_approval_is_summarised_as_an_error(empty_registry):
    deleted: list[str] = []
    tools.register_guarded_delete(deleted)

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=False, reason="no")

    events = await run_turn(
        TurnRequest(text="/delete_note title=plans", model="offline", approval_hook=approver)
    )

    assert of_type(events, ApprovalResolved)[0].approved is False
    assert "- delete_note: error" in _text(events)
    assert deleted == []


async def test_an_approved_call_runs(empty_registry):
    deleted: list[str] = []
    tools.register_guarded_delete(deleted)

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    events = await run_turn(
        TurnRequest(text="/delete_note title=plans", model="offline", approval_hook=approver)
    )

    assert of_type(events, ApprovalResolved)[0].approved is True
    assert deleted == ["plans"]


async def test_stop_mid_tool_ends_an_offline_turn(empty_registry):
    tools.register_waits_for_stop(on_start=lambda: None)
    request = TurnRequest(text="/wait_for_stop", model="offline")
    from openprogram.agent.dispatcher import process_user_turn

    events = []

    async def drive() -> None:
        async for event in process_user_turn(request, retry=FAST_RETRY):
            events.append(event)
            if isinstance(event, ToolUpdate):
                request.cancel.set()

    await asyncio.wait_for(drive(), 10)

    assert events[-1].stop_reason == "stopped"
    assert [f.is_error for f in of_type(events, ToolFinished)] == [True]
    # What it printed before Stop is kept (the call returned on its own, within its grace),
    # so run history and the page can show it.
    assert of_type(events, ToolFinished)[0].preview.endswith("Output so far:\nstarted")


async def test_the_step_limit_applies_to_the_offline_model(empty_registry):
    tools.register_echo()

    events = await run_turn(TurnRequest(text="/echo text=x", model="offline", max_steps=1))

    assert (events[-1].stop_reason, events[-1].steps) == ("step_limit", 1)


async def test_the_first_event_as_a_dict_holds_every_explain_row_and_is_the_callers_own(
    empty_registry,
):
    import dataclasses

    tools.register_echo()
    tools.register_add()

    events = await run_turn(
        TurnRequest(text="hello", model="offline", profile_tools=["echo"], deny=["nothing"])
    )
    resolved = of_type(events, ToolsResolved)[0]
    data = resolved.to_dict()

    assert data == {"type": "tools_resolved", **dataclasses.asdict(resolved)}
    assert {row["name"]: row["offered"] for row in data["explain"]}["add"] is False
    data["explain"][0]["offered"] = "changed"
    data["tools"].append("add")
    data["warnings"].append("changed")
    assert resolved.explain[0]["offered"] != "changed"  # the dict's rows are copies
    assert resolved.tools == ["echo"] and resolved.warnings and "changed" not in resolved.warnings
