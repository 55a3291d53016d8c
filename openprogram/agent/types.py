"""Wire-neutral types shared by the registry, the policy layers and the agent loop.

``AgentTool`` is the one thing every tool becomes, whatever wrote it: an
``@function`` def, an Agent method, a plugin or an MCP server. The registry,
the six gating layers and the dispatcher read only the attributes declared
here. Subclasses (``openprogram.programs.execution.FunctionTool``, the MCP
tool) implement :meth:`AgentTool.execute`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ApprovalDecision",
    "ApprovalRequest",
    "Message",
    "OnUpdate",
    "ToolCall",
    "ToolSource",
    "availability_epoch",
]

ToolSource = Literal["builtin", "plugin", "agent", "mcp"]
OnUpdate = Callable[[str], Any]
"""Called by a running tool with a chunk of streamed output (sync or async)."""


@dataclass
class AgentToolResult:
    """What a tool call returns to the loop (and, as text, to the model)."""

    content: str
    is_error: bool = False
    details: Any = None
    """Structured data (from ToolReturn.data); JSON-serialisable, never sent to the model."""
    truncated: bool = False
    dropped_chars: int = 0
    full_result_path: str | None = None
    duration_ms: float = 0.0
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """Non-text parts (images from MCP): ``{"type": "image", "mime_type", "data"}``."""
    verdict: str = ""
    """The call policy's verdict on this call (allow/ask/deny); empty when it never got one
    (invalid arguments, an unknown tool). Set by ``call_policy.run_with_policy`` only."""
    rule: str = ""
    """The rule (in words) that decided ``verdict``; empty when the tool's default did."""


@dataclass
class ToolCall:
    """A call the model asked for. ``arguments`` is the raw JSON text from the wire."""

    id: str
    name: str
    arguments: str | dict[str, Any] = "{}"


@dataclass
class Message:
    """A provider-neutral chat message (OpenAI shape, which litellm speaks)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class ApprovalRequest:
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    reason: str = ""
    rule: str = ""
    """The policy rule (in words) that made this call ask; empty for the tool's default."""
    user_may_allow: bool = True
    """False when no grant of the user may cover this ask (a rule or an "always ask" mark)."""
    suggestion: str = ""
    """The "always allow" pattern the card offers, e.g. ``bash: git status``."""


@dataclass
class ApprovalDecision:
    approved: bool
    reason: str = ""


_epochs = itertools.count(1)
_availability_epoch = 0


def availability_epoch() -> int:
    """Changes whenever any tool's ``unavailable_reason`` is set."""
    return _availability_epoch


class AgentTool:
    """A tool as the registry, the gating layers and the dispatcher see it.

    Attributes mirror the ``@function`` settings table of the spec. ``toolsets``
    is layer-2b preset membership, ``unsafe_in`` the layer-3 channel blacklist,
    ``check_fn`` / ``requires_env`` / ``can_use`` the layer-4 triad, ``defer``
    layer 6. ``parameters`` is the JSON Schema shipped to the provider.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any] | None = None,
        label: str | None = None,
        source: ToolSource = "builtin",
        server: str | None = None,
        package: str | None = None,
        expose: bool = True,
        toolsets: tuple[str, ...] = (),
        unsafe_in: frozenset[str] = frozenset(),
        defer: bool = False,
        check_fn: Callable[[], bool] | None = None,
        requires_env: tuple[str, ...] = (),
        can_use: Callable[..., bool] | None = None,
        requires_approval: bool | Callable[[dict[str, Any]], bool] = False,
        timeout: float | None = None,
        timeout_min: float | None = None,
        timeout_max: float | None = None,
        max_result_chars: int = 50_000,
        persist_full: bool = True,
        head_ratio: float = 0.5,
        stream_capacity_chars: int | None = None,
        cache: bool = False,
        cache_ttl: float | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters or {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
        }
        self.label = label or name.replace("_", " ").capitalize()
        self.source: ToolSource = source
        self.server = server
        self.package = package
        self.expose = expose
        self.toolsets = tuple(toolsets)
        self.unsafe_in = frozenset(unsafe_in)
        self.defer = defer
        self.check_fn = check_fn
        self.requires_env = tuple(requires_env)
        self.can_use = can_use
        self.requires_approval = requires_approval
        self.timeout = timeout
        self.timeout_min = timeout_min
        self.timeout_max = timeout_max
        self.max_result_chars = max_result_chars
        self.persist_full = persist_full
        self.head_ratio = head_ratio
        self.stream_capacity_chars = stream_capacity_chars
        self.cache = cache
        self.cache_ttl = cache_ttl
        self._unavailable_reason: str | None = None

    @property
    def unavailable_reason(self) -> str | None:
        """Set by owners that know a tool cannot run now (e.g. its MCP server is down): layer 4."""
        return self._unavailable_reason

    @unavailable_reason.setter
    def unavailable_reason(self, reason: str | None) -> None:
        global _availability_epoch
        self._unavailable_reason = reason
        # Resolution caches which tools carry a reason; this tells it to look again.
        _availability_epoch = next(_epochs)

    @property
    def summary(self) -> str:
        """The first line of the description, for catalogs."""
        return (self.description or "").strip().splitlines()[0] if self.description else ""

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI/litellm ``tools=[...]`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def execute(
        self,
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        raise NotImplementedError(f"{type(self).__name__} does not implement execute()")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} source={self.source!r}>"
