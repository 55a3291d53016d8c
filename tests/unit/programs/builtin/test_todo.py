"""todo_write / todo_read: the conversation's list in turn state, announced on every write."""

from __future__ import annotations

from openprogram.agent.events import TodoUpdated
from openprogram.programs.builtin.todo import todo_read, todo_write


async def test_writing_stores_the_list_and_emits_an_update(turn, call):
    events = []

    async def emit(event) -> None:
        events.append(event)

    turn.emit = emit
    todos = [
        {"content": "Write tests", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "id": "fix"},
        {"content": "Ship it", "status": "pending"},
    ]
    result = await call(todo_write, {"todos": todos})
    assert not result.is_error
    assert turn.state["todos"] == [
        {"id": "1", "content": "Write tests", "status": "completed"},
        {"id": "fix", "content": "Fix the bug", "status": "in_progress"},
        {"id": "2", "content": "Ship it", "status": "pending"},
    ]
    assert len(events) == 1 and isinstance(events[0], TodoUpdated)
    assert events[0].to_dict()["todos"] == turn.state["todos"]
    assert "(1/3 completed)" in result.content and "[~] fix. Fix the bug" in result.content


async def test_reading_shows_the_current_list(turn, call):
    await call(todo_write, {"todos": [{"content": "Only task", "status": "pending"}]})
    result = await call(todo_read, {})
    assert result.content == "Todo list (0/1 completed):\n[ ] 1. Only task"


async def test_an_empty_list_reads_as_empty(turn, call):
    assert (await call(todo_read, {})).content == "The todo list is empty."


async def test_a_write_replaces_the_whole_list(turn, call):
    await call(todo_write, {"todos": [{"content": "a", "status": "pending"}]})
    await call(todo_write, {"todos": [{"content": "b", "status": "completed", "id": "b"}]})
    assert turn.state["todos"] == [{"id": "b", "content": "b", "status": "completed"}]


async def test_invalid_items_are_refused_and_the_list_is_unchanged(turn, call):
    turn.state["todos"] = [{"id": "1", "content": "keep", "status": "pending"}]
    bad = [
        {"todos": [{"content": "x", "status": "done"}]},
        {"todos": [{"content": "", "status": "pending"}]},
        {"todos": [{"content": "x"}]},
        {"todos": [{"content": "x", "status": "pending", "colour": "red"}]},
        {"todos": [{"content": "a", "status": "pending", "id": "d"}] * 2},
        {"todos": "not a list"},
    ]
    for args in bad:
        result = await call(todo_write, args)
        assert result.is_error, args
    assert turn.state["todos"] == [{"id": "1", "content": "keep", "status": "pending"}]


async def test_outside_a_conversation_it_fails_clearly(call):
    result = await call(todo_read, {})
    assert result.is_error and "no running turn" in result.content
