"""A running tool asks the person in the chat to fill in a form or open a link.

MCP servers ask this way mid-call (``elicitation/create``); the request is
generic, so any tool could. A tool reaches the person through
``get_turn().elicitation_hook``. The dispatcher installs the wrapper built
here: every request first goes out as an :class:`ElicitationRequested` event
(the chat shows a card), then waits for the host's hook at most the turn's
approval timeout. It fails towards "no": an unattended turn or a turn without
a host hook declines; a timeout, a failing hook or an odd answer cancels.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from openprogram.agent.approvals import Emit
from openprogram.agent.events import Event

__all__ = [
    "ElicitationAnswer",
    "ElicitationField",
    "ElicitationHook",
    "ElicitationRequest",
    "ElicitationRequested",
    "ElicitationResolved",
    "elicitation_hook_for_turn",
]

_log = logging.getLogger(__name__)

ElicitAction = Literal["accept", "decline", "cancel"]
FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]


@dataclass(frozen=True)
class ElicitationField:
    """One input of a form, already checked; ``options`` are ``(value, label)`` pairs."""

    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()
    format: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "required": self.required,
            "default": self.default,
            "options": [list(option) for option in self.options],
            "format": self.format,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "min_length": self.min_length,
            "max_length": self.max_length,
        }


@dataclass
class ElicitationRequest:
    """What to ask: a form (``fields``) or a link to open (``url``).

    ``call_id`` identifies this request (answers name it); ``tool_call_id`` is
    the call that asked, so the chat shows the card on that call's card.
    ``complete`` turns an accepted form's content into what is sent (defaults
    filled in), raising ``ValueError`` with a message when it does not fit.
    """

    call_id: str
    tool_call_id: str
    source: str
    mode: Literal["form", "url"]
    message: str
    fields: list[ElicitationField] = field(default_factory=list)
    url: str = ""
    complete: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass
class ElicitationAnswer:
    action: ElicitAction
    content: dict[str, Any] | None = None
    reason: str = ""


@dataclass
class ElicitationRequested(Event):
    type: ClassVar[str] = "elicitation_requested"
    call_id: str
    tool_call_id: str
    source: str
    mode: str
    message: str
    fields: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


@dataclass
class ElicitationResolved(Event):
    type: ClassVar[str] = "elicitation_resolved"
    call_id: str
    tool_call_id: str
    action: str
    reason: str = ""


ElicitationHook = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]


def elicitation_hook_for_turn(
    *, host_hook: ElicitationHook | None, attended: bool, emit: Emit, timeout: float
) -> ElicitationHook:
    async def ask(request: ElicitationRequest) -> ElicitationAnswer:
        await emit(
            ElicitationRequested(
                call_id=request.call_id,
                tool_call_id=request.tool_call_id,
                source=request.source,
                mode=request.mode,
                message=request.message,
                fields=[f.to_dict() for f in request.fields],
                url=request.url,
            )
        )
        if not attended:
            answer = ElicitationAnswer("decline", reason="nobody is attending this turn")
        elif host_hook is None:
            answer = ElicitationAnswer("decline", reason="this turn has no way to ask")
        else:
            answer = await _answer(host_hook, request, timeout)
        await emit(
            ElicitationResolved(
                call_id=request.call_id,
                tool_call_id=request.tool_call_id,
                action=answer.action,
                reason=answer.reason,
            )
        )
        return answer

    return ask


async def _answer(
    hook: ElicitationHook, request: ElicitationRequest, timeout: float
) -> ElicitationAnswer:
    try:
        answer = await asyncio.wait_for(hook(request), timeout)
    except TimeoutError:
        return ElicitationAnswer("cancel", reason=f"no answer within {timeout:g} s")
    except Exception as exc:
        _log.exception("elicitation hook failed for %r", request.call_id)
        return ElicitationAnswer("cancel", reason=f"the hook failed ({type(exc).__name__})")
    if not isinstance(answer, ElicitationAnswer) or answer.action not in (
        "accept",
        "decline",
        "cancel",
    ):
        return ElicitationAnswer("cancel", reason="the answer was not accept, decline or cancel")
    if answer.action != "accept" or request.mode == "url":
        return ElicitationAnswer(answer.action, reason=answer.reason)
    content = answer.content if isinstance(answer.content, dict) else {}
    if request.complete is not None:
        try:
            content = request.complete(content)
        except ValueError as exc:
            return ElicitationAnswer("cancel", reason=f"the answer did not fit the form: {exc}")
    return ElicitationAnswer("accept", content=content)
