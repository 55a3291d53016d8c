"""The ``todo_write`` / ``todo_read`` tools: the conversation's task list, shown live.

The list lives in ``TurnContext.state["todos"]`` (a list of plain dicts the host
persists between turns); every write replaces it whole and emits ``TodoUpdated`` so
each open tab redraws it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from openprogram.agent.context import TurnContext, get_turn
from openprogram.agent.events import TodoUpdated
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn

__all__ = ["TodoItem", "TodoStatus", "todo_read", "todo_write"]

TodoStatus = Literal["pending", "in_progress", "completed"]
MAX_TODOS = 100
_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoItem(BaseModel):
    """One task on the list."""

    model_config = ConfigDict(extra="forbid")

    content: Annotated[str, Field(min_length=1, max_length=500, description="What to do.")]
    status: Annotated[TodoStatus, Field(description="pending, in_progress or completed.")]
    id: Annotated[
        str | None, Field(default=None, max_length=64, description="Stable id; kept if given.")
    ] = None


class NoConversation(RuntimeError):
    """Todo lists belong to a conversation; there is none outside a turn."""


def _turn() -> TurnContext:
    turn = get_turn()
    if turn is None:
        raise NoConversation("there is no conversation to keep a todo list for (no running turn)")
    return turn


def _render(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "The todo list is empty."
    done = sum(1 for todo in todos if todo.get("status") == "completed")
    lines = [
        f"{_MARKS.get(todo.get('status', ''), '[ ]')} {todo.get('id', '?')}. {todo.get('content', '')}"
        for todo in todos
    ]
    return "\n".join([f"Todo list ({done}/{len(todos)} completed):", *lines])


def _with_ids(todos: list[TodoItem]) -> list[dict[str, Any]]:
    taken = {todo.id for todo in todos if todo.id}
    if len(taken) != sum(1 for todo in todos if todo.id):
        raise ValueError("two todos share the same id; ids must be unique")
    numbered: list[dict[str, Any]] = []
    counter = 0
    for todo in todos:
        item_id = todo.id
        while not item_id:
            counter += 1
            item_id = str(counter) if str(counter) not in taken else None
        taken.add(item_id)
        numbered.append({"id": item_id, "content": todo.content.strip(), "status": todo.status})
    return numbered


@function(toolset=["interaction"], label="Update todo list")
async def todo_write(todos: list[TodoItem]) -> ToolReturn:
    """Replace the conversation's todo list with `todos`; the person sees it update live.

    Use it for work with three or more steps: write the plan as pending items, mark one
    item in_progress when you start it, and completed as soon as it is done (keep at most
    one in_progress). Always send the whole list, not just the changed items — this call
    replaces it. Give each item the same `id` on every call (ids you leave out are
    numbered for you). Up to 100 items.

    Args:
        todos: The complete list, in order.
    """
    if len(todos) > MAX_TODOS:
        raise ValueError(f"the list has {len(todos)} items; keep it to {MAX_TODOS} or fewer")
    turn = _turn()
    items = _with_ids(todos)
    turn.state["todos"] = items
    if turn.emit is not None:
        await turn.emit(TodoUpdated(todos=[dict(item) for item in items]))
    return ToolReturn(_render(items), data={"todos": items})


@function(toolset=["interaction"], label="Read todo list")
def todo_read() -> ToolReturn:
    """Show the conversation's current todo list with each item's id and status.

    Use it to check where you are before continuing a multi-step task; todo_write
    changes the list.
    """
    todos = list(_turn().state.get("todos") or [])
    return ToolReturn(_render(todos), data={"todos": todos})
