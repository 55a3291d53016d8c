"""Events a turn yields, and the plain request that starts one.

Events are small, typed, JSON-serialisable dataclasses that know nothing of
Django. ``event.to_dict()`` gives ``{"type": ..., **fields}``; the web app
stores that in run history and relays it to every open tab.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from openprogram.agent.context import QuestionRequest
from openprogram.agent.types import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from openprogram.programs.rules import PolicySet

__all__ = [
    "ApprovalRequested",
    "ApprovalResolved",
    "Event",
    "HistoryMessage",
    "ModelCallFinished",
    "QuestionAsked",
    "TextDelta",
    "TodoUpdated",
    "ToolCallStarted",
    "ToolFinished",
    "ToolUpdate",
    "ToolsResolved",
    "TurnError",
    "TurnFinished",
    "TurnRequest",
]


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class ToolsResolved(Event):
    """First event of a turn: what the model is offered, and why the rest is not."""

    type: ClassVar[str] = "tools_resolved"
    tools: list[str]
    deferred: list[str]
    explain: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        # Every turn's first event, built before its first model request leaves: ``asdict``
        # deep-copied each explain row value by value (~0.2 ms a turn, time to first
        # token in a burst). The rows are flat (str, bool, None), so a copy per row is a
        # full copy.
        return {
            "type": self.type,
            "tools": list(self.tools),
            "deferred": list(self.deferred),
            "explain": [dict(row) for row in self.explain],
            "warnings": list(self.warnings),
            "model": self.model,
        }


@dataclass
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str

    def to_dict(self) -> dict[str, Any]:
        # The most frequent event by far; ``asdict``'s recursive copy is wasted on one str.
        return {"type": self.type, "text": self.text}


@dataclass
class ToolCallStarted(Event):
    type: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    arguments: dict[str, Any] | str
    parent_call_id: str | None = None


@dataclass
class ToolUpdate(Event):
    type: ClassVar[str] = "tool_update"
    call_id: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        # One per line of streamed tool output: as TextDelta, no recursive copy of two strs.
        return {"type": self.type, "call_id": self.call_id, "text": self.text}


@dataclass
class ApprovalRequested(Event):
    type: ClassVar[str] = "approval_requested"
    call_id: str
    name: str
    arguments: dict[str, Any]
    reason: str = ""
    rule: str = ""
    """The policy rule (in words) that made this call ask; empty for the tool's default."""
    user_may_allow: bool = True
    """Whether "always allow" (and "allow for this chat") may be offered for this ask."""
    suggestion: str = ""
    """The editable "always allow" pattern, e.g. ``bash: git status``."""


@dataclass
class ApprovalResolved(Event):
    type: ClassVar[str] = "approval_resolved"
    call_id: str
    approved: bool
    reason: str = ""


@dataclass
class QuestionAsked(Event):
    type: ClassVar[str] = "question_asked"
    call_id: str
    question: str
    choices: list[str] = field(default_factory=list)


@dataclass
class TodoUpdated(Event):
    type: ClassVar[str] = "todo_updated"
    todos: list[dict[str, Any]]


@dataclass
class ToolFinished(Event):
    type: ClassVar[str] = "tool_finished"
    call_id: str
    name: str
    preview: str
    is_error: bool = False
    truncated: bool = False
    full_result_path: str | None = None
    duration_ms: float = 0.0
    parent_call_id: str | None = None
    verdict: str = ""
    """The call policy's verdict (allow/ask/deny), empty if the call never reached it."""
    rule: str = ""
    """The rule (in words) that decided it; empty when the tool's default did."""


@dataclass
class ModelCallFinished(Event):
    """One provider call's tokens and price (``estimated`` when the provider gave no usage)."""

    type: ClassVar[str] = "model_call"
    model: str
    step: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    price_known: bool = True
    estimated: bool = False
    finish_reason: str | None = None
    duration_ms: float = 0.0


@dataclass
class TurnFinished(Event):
    type: ClassVar[str] = "turn_finished"
    stop_reason: Literal["completed", "stopped", "step_limit", "error", "budget"] = "completed"
    usage: dict[str, int] = field(default_factory=dict)
    text: str = ""
    steps: int = 0
    cost_usd: float = 0.0
    price_known: bool = True
    """False when any model call's price was unknown (it was counted as 0)."""


@dataclass
class TurnError(Event):
    type: ClassVar[str] = "error"
    message: str
    kind: str = "error"
    """e.g. ``provider_auth``, ``provider_bad_request``, ``provider_unavailable``, ``internal``."""


@dataclass
class HistoryMessage:
    """Earlier conversation text. Tool results never appear here (spec: run history only)."""

    role: Literal["user", "assistant"]
    content: str


@dataclass
class TurnRequest:
    """Everything a turn needs, as plain values; built by the web app, the CLI or a script."""

    text: str
    history: list[HistoryMessage] = field(default_factory=list)
    model: str = "offline"
    user_id: str | int | None = None
    conversation_id: str | int | None = None
    profile_tools: list[str] | None = None
    """Layer 2b: the tool profile's names; None means the default profile (all exposed)."""
    toolset: str | None = None
    """Layer 2b/3: a preset or named profile (from an agent profile's tools.toolset)."""
    allow: list[str] | None = None
    deny: list[str] | None = None
    disabled: set[str] | dict[str, str] = field(default_factory=set)
    """Layer 5: globally disabled tool names (or names → the admin's reason, for the trace)."""
    tools_on: bool = True
    web_search_on: bool = True
    plan_mode: bool = False
    source: str | None = None
    attended: bool = True
    system_prompt: str | None = None
    workspace: Path | None = None
    state: dict[str, Any] = field(default_factory=dict)
    approval_hook: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]] | None = None
    question_hook: Callable[[QuestionRequest], Awaitable[str]] | None = None
    elicitation_hook: Callable[[Any], Awaitable[Any]] | None = None
    """Answers a tool's form or link request (``openprogram.agent.elicitation``)."""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    max_steps: int = 25
    approval_timeout: float = 300.0
    named_profiles: dict[str, list[str]] | None = None
    """The user's tool profiles by name, so ``toolset`` may name one (layer 2b)."""
    """Seconds an approval or a question waits for the human before it counts as denied."""
    can_use_context: dict[str, Any] = field(default_factory=dict)
    """Passed to each tool's layer-4 ``can_use`` gate (user, role...)."""
    budget_check: Callable[[float], Awaitable[str | None]] | None = None
    """Called before every model call with this turn's cost so far (USD); a message means
    the user's budget is spent: refused before the first call, stopped after a step."""
    policy: PolicySet | None = None
    """The team policy reaching this user (``openprogram.programs.rules``): layer 5
    removes what no rule could allow; every call is decided by it (``call_policy``)."""
