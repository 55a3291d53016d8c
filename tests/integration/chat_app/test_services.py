"""Conversation services and the turn store's bookkeeping: titles, remembered choices,
the rows that summarise a run's events."""

from __future__ import annotations

import pytest

from chat_app.models import Conversation, Run, RunEvent, ToolCallRecord
from chat_app.schemas import TurnOptions
from chat_app.services import NO_AGENT, conversation_apply_options
from chat_app.turn_store import run_finish
from core.api_errors import ConflictError
from tests.integration.chat_app.store_jobs import record_now, start_now

pytestmark = pytest.mark.django_db


def test_the_title_comes_from_the_first_message(conversation):
    owner = conversation.owner
    text = "Please help me   plan a trip to the mountains next summer with friends"
    started = start_now(user=owner, conversation=conversation, text=text)
    run_finish(run_id=started.run_id, status="completed", text="ok")
    conversation.refresh_from_db()
    assert conversation.title == "Please help me plan a trip to the mountains next…"
    start_now(user=owner, conversation=conversation, text="another question")
    conversation.refresh_from_db()
    assert conversation.title.startswith("Please help me")


def test_only_one_turn_runs_per_conversation(conversation):
    start_now(user=conversation.owner, conversation=conversation, text="one")
    with pytest.raises(ConflictError, match="already running"):
        start_now(user=conversation.owner, conversation=conversation, text="two")


def test_the_agent_profile_is_chosen_and_cleared(conversation, alice):
    from tools_app.models import AgentProfile

    agent = AgentProfile.objects.create(owner=alice, name="researcher", model="offline")
    conversation_apply_options(
        conversation=conversation, options=TurnOptions(agent_profile=agent.pk)
    )
    assert Conversation.objects.get(pk=conversation.pk).agent_profile_id == agent.pk
    conversation_apply_options(
        conversation=conversation, options=TurnOptions(agent_profile=NO_AGENT)
    )
    assert Conversation.objects.get(pk=conversation.pk).agent_profile_id is None


def test_bobs_agent_profile_cannot_be_picked_by_alice(conversation, bob):
    from core.api_errors import UnprocessableError
    from tools_app.models import AgentProfile

    agent = AgentProfile.objects.create(owner=bob, name="bobs")
    with pytest.raises(UnprocessableError, match="does not exist"):
        conversation_apply_options(
            conversation=conversation, options=TurnOptions(agent_profile=agent.pk)
        )


def test_events_keep_the_tool_call_rows_and_todos_in_step(conversation):
    run = Run.objects.create(conversation=conversation, model="offline")
    record_now(
        run_id=run.pk,
        events=[
            {
                "seq": 1,
                "type": "tool_call_started",
                "call_id": "c1",
                "name": "bash",
                "arguments": {"command": "ls"},
            },
            {
                "seq": 2,
                "type": "approval_requested",
                "call_id": "c1",
                "name": "bash",
                "arguments": {},
            },
        ],
    )
    assert ToolCallRecord.objects.get(run=run, call_id="c1").status == "awaiting_approval"
    record_now(
        run_id=run.pk,
        events=[
            {
                "seq": 3,
                "type": "approval_resolved",
                "call_id": "c1",
                "approved": False,
                "reason": "no",
            },
            {
                "seq": 4,
                "type": "tool_finished",
                "call_id": "c1",
                "name": "bash",
                "preview": "denied",
                "is_error": True,
            },
            {"seq": 5, "type": "todo_updated", "todos": [{"content": "pack", "status": "pending"}]},
        ],
    )
    record = ToolCallRecord.objects.get(run=run, call_id="c1")
    assert (record.status, record.is_error, record.result_preview) == ("denied", True, "denied")
    assert Conversation.objects.get(pk=conversation.pk).todos == [
        {"content": "pack", "status": "pending"}
    ]
    assert list(RunEvent.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2, 3, 4, 5]


def test_finishing_a_stopped_run_closes_its_open_calls_and_keeps_partial_text(conversation):
    run = Run.objects.create(conversation=conversation, model="offline")
    record_now(
        run_id=run.pk,
        events=[
            {
                "seq": 1,
                "type": "tool_call_started",
                "call_id": "c1",
                "name": "bash",
                "arguments": {},
            }
        ],
    )
    message = run_finish(run_id=run.pk, status="stopped", text="partial ans")
    run.refresh_from_db()
    assert (run.status, run.text, message.text) == ("stopped", "partial ans", "partial ans")
    assert ToolCallRecord.objects.get(run=run).status == "stopped"  # not an error


def test_a_nested_call_keeps_its_parent(conversation):
    run = Run.objects.create(conversation=conversation, model="offline")
    record_now(
        run_id=run.pk,
        events=[
            {
                "seq": 1,
                "type": "tool_call_started",
                "call_id": "outer",
                "name": "research",
                "arguments": {},
            },
            {
                "seq": 2,
                "type": "tool_call_started",
                "call_id": "inner",
                "name": "read",
                "arguments": {"path": "a"},
                "parent_call_id": "outer",
            },
        ],
    )
    assert ToolCallRecord.objects.get(run=run, call_id="inner").parent_call_id == "outer"
    assert ToolCallRecord.objects.get(run=run, call_id="outer").parent_call_id == ""


def test_a_call_announced_again_keeps_one_row_with_what_was_said_last(conversation):
    run = Run.objects.create(conversation=conversation, model="offline")
    started = {"type": "tool_call_started", "call_id": "c1", "name": "read"}
    record_now(
        run_id=run.pk,
        events=[
            {**started, "seq": 1, "arguments": {"path": "a.txt"}},
            {
                **started,
                "seq": 2,
                "arguments": {"path": "b.txt", "n": [1, 2]},
                "parent_call_id": "p",
            },
            {
                "seq": 3,
                "type": "tool_finished",
                "call_id": "c1",
                "preview": "ok",
                "duration_ms": 4.5,
            },
        ],
    )

    record = ToolCallRecord.objects.get(run=run)
    assert (record.arguments, record.parent_call_id) == ({"path": "b.txt", "n": [1, 2]}, "p")
    assert (record.status, record.result_preview, record.duration_ms) == ("done", "ok", 4.5)
    assert record.created is not None
    payloads = list(RunEvent.objects.filter(run=run).values_list("payload", flat=True))
    assert payloads[1]["arguments"] == {"path": "b.txt", "n": [1, 2]}


def test_a_call_that_finished_without_being_announced_still_gets_its_row(conversation):
    run = Run.objects.create(conversation=conversation, model="offline")
    record_now(
        run_id=run.pk,
        events=[
            {
                "seq": 1,
                "type": "tool_finished",
                "call_id": "refused",
                "name": "bash",
                "preview": "arguments were not valid JSON",
                "is_error": True,
            }
        ],
    )

    record = ToolCallRecord.objects.get(run=run, call_id="refused")
    assert (record.name, record.status, record.is_error) == ("bash", "error", True)
