"""Request and response shapes of the tools API (``/api/tools``, ``/api/profiles``...)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, model_validator

__all__ = [
    "AgentProfileIn",
    "AgentProfileOut",
    "AgentProfilePatch",
    "AgentToolsField",
    "BodySchema",
    "CostOut",
    "DuplicateIn",
    "ImportIn",
    "ImportOut",
    "ProfileAddToolIn",
    "ProfileDetailOut",
    "ProfileIn",
    "ProfileOut",
    "ProfilePatch",
    "ResolveIn",
    "ResolveOut",
    "TokenCreatedOut",
    "TokenIn",
    "TokenOut",
    "ToolDetailOut",
    "ToolDisableIn",
    "ToolOut",
]


class BodySchema(BaseModel):
    """A request body: a JSON object, nothing else.

    A plain pydantic model, not ninja's ``Schema``: that one also reads attributes off
    arbitrary objects (for ORM rows), so it would take ``[1, 2]``, ``"x"`` or ``5`` as an
    empty object and answer 200, and it hands validators the input wrapped in a
    ``DjangoGetter`` with no public way back to it. Every body schema here refuses a
    non-object with 422 and says so.
    """

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, value: Any) -> Any:
        if not isinstance(value, dict | BodySchema):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return value


class ToolOut(Schema):
    name: str
    label: str
    description: str
    source: Literal["builtin", "plugin", "agent", "mcp"]
    server: str
    package: str
    toolsets: list[str]
    deferred: bool
    requires_approval: bool
    hints: dict[str, bool] = {}
    """An MCP server's annotations: read_only, destructive, open_world (hints, untrusted)."""
    present: bool
    disabled: bool
    disabled_reason: str
    disabled_at: datetime | None
    unavailable_reason: str | None = None
    """Why the tool cannot run now (layer 4), from the explain trace."""


class ToolDetailOut(ToolOut):
    parameters: dict[str, Any]
    profile: str
    """The profile the explain trace was computed for (the user's active one)."""
    offered: bool
    explain: dict[str, Any] | None
    schema_tokens: int | None
    """Prompt tokens this tool's schema costs when shipped in full."""
    """This tool's entry of the explain trace: layer and reason when not offered, and
    ``words``, that reason for people (``openprogram.programs.explain_words``)."""


class ToolDisableIn(BodySchema):
    disabled: bool = True
    reason: str = Field("", max_length=500)


class ProfileOut(Schema):
    name: str
    tools: list[str]
    is_default: bool
    is_active: bool
    missing: list[str]
    disabled: list[str]


class CostOut(Schema):
    tool_count: int
    deferred_count: int
    prompt_tokens: int
    deferral_saved_tokens: int


class ProfileDetailOut(ProfileOut):
    cost: CostOut


class ProfileIn(BodySchema):
    name: str
    tools: list[str] | None = None
    """Omit to copy the default profile (every exposed tool)."""


class ProfilePatch(BodySchema):
    name: str | None = None
    tools: list[str] | None = None
    active: bool | None = None
    """True makes this the chat composer's default profile."""


class ProfileAddToolIn(BodySchema):
    tool: str


class DuplicateIn(BodySchema):
    name: str


class ImportIn(BodySchema):
    profiles: dict[str, Any]
    active: str = "default"
    replace: bool = False


class ImportOut(Schema):
    created: list[str]
    updated: list[str]
    deleted: list[str]


class ResolveIn(BodySchema):
    profile: str | None = None
    """None: the user's active profile."""
    source: str | None = None
    tools_on: bool = True
    web_search_on: bool = True
    plan_mode: bool = False
    attended: bool = True
    agent_profile: int | None = None


class ResolveOut(Schema):
    profile: str
    tools: list[str]
    deferred: list[str]
    explain: list[dict[str, Any]]
    """One row per registered tool; a row not offered has ``layer``, ``reason`` and
    ``words`` (the reason for people)."""
    warnings: list[str]
    cost: CostOut


class AgentToolsField(BodySchema):
    toolset: str | None = None
    enabled: list[str] = []
    disabled: list[str] = []
    allowed: list[str] = []


class AgentProfileIn(BodySchema):
    name: str
    model: str = ""
    system_prompt: str = ""
    tools: AgentToolsField = AgentToolsField()


class AgentProfilePatch(BodySchema):
    name: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    tools: AgentToolsField | None = None


class AgentProfileOut(Schema):
    id: int
    name: str
    model: str
    system_prompt: str
    tools: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class TokenIn(BodySchema):
    name: str


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str
    """The clear token; shown once, never stored."""
