"""What a client may send: WebSocket frames and API bodies, strictly parsed.

Every frame the browser sends is one of the ``*Frame`` models below, picked by its
``type``; anything else (bad JSON, an unknown type, a missing field, an oversize frame)
gets an error frame back and the socket stays open.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "MAX_FRAME_BYTES",
    "AnswerFrame",
    "ApproveFrame",
    "ClientFrame",
    "ConversationIn",
    "ConversationOut",
    "ConversationPatch",
    "DenyFrame",
    "NotOfferedOut",
    "RunDetailOut",
    "RunOut",
    "StopFrame",
    "ToolCallOut",
    "TurnIn",
    "TurnOptions",
    "TurnOut",
    "UserMessageFrame",
    "parse_client_frame",
]

MAX_FRAME_BYTES = 64 * 1024
MAX_TEXT_CHARS = 32_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class TurnOptions(_Strict):
    """The per-turn choices the composer sends with each message (None: keep the saved one)."""

    profile: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=200)
    agent_profile: int | None = None
    tools_on: bool | None = None
    web_search_on: bool | None = None
    plan_mode: bool | None = None
    attended: bool | None = None


class UserMessageFrame(TurnOptions):
    type: Literal["user_message"]
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    replaces: int | None = Field(default=None, ge=1)
    """An edit or a regeneration: this run (and every later one) is superseded, kept in
    history but left out of the new turn's prompt."""


class ApproveFrame(_Strict):
    type: Literal["approve"]
    call_id: str = Field(min_length=1, max_length=128)
    reason: str = Field(default="", max_length=2000)
    remember: bool = False
    """Allow this tool for the rest of the conversation (never an always-ask tool)."""
    always_allow: str = Field(default="", max_length=500)
    """Save an "always allow" rule, ``tool: pattern`` (docs/policy.md), with the approval."""


class DenyFrame(_Strict):
    type: Literal["deny"]
    call_id: str = Field(min_length=1, max_length=128)
    reason: str = Field(default="", max_length=2000)


class AnswerFrame(_Strict):
    type: Literal["answer"]
    call_id: str = Field(min_length=1, max_length=128)
    text: str = Field(max_length=MAX_TEXT_CHARS)


class ElicitFrame(_Strict):
    """The owner's answer to a tool's form or link (an MCP server's elicitation)."""

    type: Literal["elicit"]
    call_id: str = Field(min_length=1, max_length=128)
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str] | None] | None = None


class StopFrame(_Strict):
    type: Literal["stop"]


ClientFrame = Annotated[
    UserMessageFrame | ApproveFrame | DenyFrame | AnswerFrame | ElicitFrame | StopFrame,
    Field(discriminator="type"),
]
_frame_adapter: TypeAdapter[Any] = TypeAdapter(ClientFrame)


def parse_client_frame(
    data: Any,
) -> UserMessageFrame | ApproveFrame | DenyFrame | AnswerFrame | ElicitFrame | StopFrame:
    """Validate a decoded JSON frame; raises ``pydantic.ValidationError``."""
    return _frame_adapter.validate_python(data)


# --- API bodies --------------------------------------------------------------------------


class ConversationIn(_Strict):
    title: str = Field(default="", max_length=120)
    profile: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=200)
    agent_profile: int | None = None


class ConversationPatch(TurnOptions):
    title: str | None = Field(default=None, max_length=120)


class ConversationOut(BaseModel):
    id: str
    """The conversation's random public id (a UUID); URLs and the socket use it too."""
    title: str
    profile: str
    model: str
    agent_profile: int | None
    tools_on: bool
    web_search_on: bool
    plan_mode: bool
    attended: bool
    todos: list[dict[str, Any]]
    created: datetime
    updated: datetime


class TurnIn(TurnOptions):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)


class TurnOut(BaseModel):
    run_id: int
    status: str
    text: str
    error: str


class ToolCallOut(BaseModel):
    call_id: str
    name: str
    arguments: Any
    status: str
    result_preview: str
    is_error: bool
    truncated: bool
    has_full_result: bool
    duration_ms: float
    parent_call_id: str


class RunOut(BaseModel):
    id: int
    conversation: str
    status: str
    model: str
    profile: str
    attended: bool
    options: dict[str, Any]
    tools: list[str]
    deferred: list[str]
    warnings: list[str]
    usage: dict[str, Any]
    text: str
    error: str
    started: datetime
    finished: datetime | None


class NotOfferedOut(BaseModel):
    layer: str | None
    reason: str
    names: list[str]
    words: str = ""
    """The reason for people; ``layer`` and ``reason`` are the code and its raw text."""


class RunDetailOut(RunOut):
    explain: list[dict[str, Any]]
    """One row per registered tool (rebuilt from the compact form the run stores)."""
    not_offered: list[NotOfferedOut]
    events: list[dict[str, Any]]
    tool_calls: list[ToolCallOut]
