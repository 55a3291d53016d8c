"""Per-turn state a running tool can reach without globals.

The dispatcher sets :data:`current_turn` for the duration of a turn; tools read
it through :func:`get_turn` (workspace, approval and question hooks, the event
sink, per-conversation state such as the todo list). Outside a turn it is None
and tools fall back to safe defaults (no approval hook ⇒ deny).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.agent.types import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from openprogram.programs.rules import PolicySet

__all__ = ["QuestionRequest", "TurnContext", "current_turn", "get_turn"]


@dataclass
class QuestionRequest:
    call_id: str
    question: str
    choices: list[str] = field(default_factory=list)


@dataclass
class TurnContext:
    user_id: str | int | None = None
    conversation_id: str | int | None = None
    workspace: Path | None = None
    source: str | None = None
    attended: bool = True
    model: str | None = None
    approval_hook: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]] | None = None
    question_hook: Callable[[QuestionRequest], Awaitable[str]] | None = None
    elicitation_hook: Callable[[Any], Awaitable[Any]] | None = None
    """Asks the person to fill a form or open a link (see ``openprogram.agent.elicitation``)."""
    emit: Callable[[Any], Awaitable[None]] | None = None
    """Sends a framework event (e.g. a todo update) to whoever runs the turn."""
    state: dict[str, Any] = field(default_factory=dict)
    """Per-conversation state the host persists between turns (``todos``...)."""
    named_profiles: dict[str, list[str]] | None = None
    """The user's tool profiles, so a nested run's ``toolset=`` may name one."""
    budget_check: Callable[[float], Awaitable[str | None]] | None = None
    """The turn's budget check, which nested runs ask too (their model calls cost)."""
    policy: PolicySet | None = None
    """The team policy every call of this turn is decided by (``call_policy``)."""


current_turn: ContextVar[TurnContext | None] = ContextVar("openprogram_current_turn", default=None)


def get_turn() -> TurnContext | None:
    return current_turn.get()
