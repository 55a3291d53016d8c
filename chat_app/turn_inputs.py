"""Everything a chat turn starts from: the conversation's choices turned into TurnRequest
values (read and written by ``chat_app.turn_store``'s start, before the turn's task starts).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from openprogram.agent.events import TurnRequest

__all__ = ["PreparedTurn", "turn_request_kwargs"]


@dataclasses.dataclass(frozen=True)
class PreparedTurn:
    run_id: int
    message_id: int
    title: str
    allowed_tools: frozenset[str]
    """Tools the owner allowed for the rest of this conversation (chat_app.approvals)."""
    request_kwargs: dict[str, Any]
    """TurnRequest keyword arguments, hooks excepted (the running turn supplies those)."""
    first_event: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The turn's ``user_message`` event, already in run history as ``seq`` 1 (written by
    the start): the turn relays it, with no history job of its own before its request."""
    budget_refusal: str | None = None
    """The owner's budget verdict as the run opened (``usage_app.services.budget_verdict``,
    nothing spent yet): the first model call's check, answered without another job."""


def turn_request_kwargs(values: dict[str, Any]) -> dict[str, Any]:
    """Only the TurnRequest fields this framework version has (it grows optional ones)."""
    names = _request_fields()
    return {k: v for k, v in values.items() if k in names}


@functools.cache
def _request_fields() -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(TurnRequest))
