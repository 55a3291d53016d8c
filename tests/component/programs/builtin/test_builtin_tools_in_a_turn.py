"""The shipped tools inside real turns: dispatcher, agent loop, offline model (via litellm)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openprogram.programs  # noqa: F401 - registers the shipped tools
from openprogram import config
from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import (
    Event,
    TodoUpdated,
    ToolFinished,
    ToolsResolved,
    ToolUpdate,
    TurnRequest,
)
from openprogram.agent.types import ApprovalDecision, ApprovalRequest


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        config, "_config", config.Config(home=tmp_path / "home", results_dir=tmp_path / "results")
    )


async def _turn(request: TurnRequest) -> list[Event]:
    return [event async for event in process_user_turn(request)]


def _finished(events: list[Event]) -> list[ToolFinished]:
    return [event for event in events if isinstance(event, ToolFinished)]


async def test_write_then_read_land_in_the_users_workspace(tmp_path):
    await _turn(
        TurnRequest(text='/write {"path": "notes/a.txt", "content": "hi"}', user_id="alice")
    )
    events = await _turn(TurnRequest(text="/read notes/a.txt", user_id="alice"))
    assert (tmp_path / "home" / "workspaces" / "alice" / "notes" / "a.txt").read_text() == "hi"
    [finished] = _finished(events)
    assert not finished.is_error and "1\thi" in finished.preview


async def test_bob_cannot_read_alices_file_in_a_turn(tmp_path):
    await _turn(
        TurnRequest(text='/write {"path": "s.txt", "content": "alice only"}', user_id="alice")
    )
    events = await _turn(TurnRequest(text="/read ../alice/s.txt", user_id="bob"))
    [finished] = _finished(events)
    assert finished.is_error and "alice only" not in finished.preview


async def test_plan_mode_hides_the_tools_that_change_things():
    events = await _turn(TurnRequest(text="hello", plan_mode=True))
    offered = next(event for event in events if isinstance(event, ToolsResolved)).tools
    assert "read" in offered
    assert not {"write", "edit", "bash"} & set(offered)


async def test_an_approved_bash_call_streams_its_output_as_tool_updates(tmp_path):
    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    events = await _turn(
        TurnRequest(text="/bash echo streamed; echo twice", user_id="alice", approval_hook=approve)
    )
    updates = "".join(event.text for event in events if isinstance(event, ToolUpdate))
    assert "streamed" in updates
    [finished] = _finished(events)
    assert not finished.is_error and "[exit code 0]" in finished.preview


async def test_todo_write_emits_a_todo_update_and_keeps_the_list_in_state():
    state: dict = {}
    text = '/todo_write {"todos": [{"content": "Plan", "status": "in_progress"}]}'
    events = await _turn(TurnRequest(text=text, user_id="alice", state=state))
    [update] = [event for event in events if isinstance(event, TodoUpdated)]
    assert update.todos == [{"id": "1", "content": "Plan", "status": "in_progress"}]
    assert state["todos"] == update.todos
