"""The calls in flight on one connection, and whose a server's question is.

An ``elicitation/create`` from a server names no call. Within a call's own
task (the 2026 protocol's input rounds) the call is known from a context
variable. Otherwise (a server-initiated request on a shared stdio or HTTP
session) it goes to the one turn that has calls in flight; with calls of
several turns in flight it cannot be told whose it is, so nobody is asked and
the server gets a decline: one person never sees another person's question.
While a person is asked, the server's clock for those calls stops (the wait is
bounded by the turn's approval timeout instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

import mcp_types

from openprogram.mcp.elicitation import CallElicitor

__all__ = ["CallsInFlight", "InFlightCall"]

logger = logging.getLogger(__name__)


class InFlightCall:
    """One call in progress: who may be asked on its behalf, and its deadline."""

    def __init__(self, elicitor: CallElicitor | None) -> None:
        self.elicitor = elicitor
        self.deadline: asyncio.Timeout | None = None
        self._paused = 0
        self._remaining = 0.0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the call's clock while a person is asked (that wait has its own bound)."""
        loop = asyncio.get_running_loop()
        deadline = self.deadline
        if deadline is not None and self._paused == 0 and deadline.when() is not None:
            self._remaining = max(0.0, deadline.when() - loop.time())
            deadline.reschedule(None)
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1
            if deadline is not None and self._paused == 0:
                deadline.reschedule(loop.time() + self._remaining)


_CURRENT_CALL: contextvars.ContextVar[InFlightCall | None] = contextvars.ContextVar(
    "openprogram_mcp_call", default=None
)


class CallsInFlight:
    def __init__(self) -> None:
        self._calls: set[InFlightCall] = set()

    @contextlib.contextmanager
    def track(self, elicitor: CallElicitor | None) -> Iterator[InFlightCall]:
        call = InFlightCall(elicitor)
        self._calls.add(call)
        token = _CURRENT_CALL.set(call)
        try:
            yield call
        finally:
            _CURRENT_CALL.reset(token)
            self._calls.discard(call)

    async def elicit(self, params: Any, *, server: str) -> Any:
        """Ask the person of the call this question belongs to, or decline."""
        current = _CURRENT_CALL.get()
        if current is not None:
            calls = [current]
        else:
            calls = [call for call in self._calls if call.elicitor is not None]
            owners = {id(call.elicitor.owner) for call in calls if call.elicitor is not None}
            if len(owners) != 1:
                if owners:
                    logger.warning(
                        "MCP server %r asked for input while calls of %d turns were in "
                        "flight; declined (cannot tell which call asked)",
                        server,
                        len(owners),
                    )
                return mcp_types.ElicitResult(action="decline")
        elicitor = calls[0].elicitor
        if elicitor is None:
            return mcp_types.ElicitResult(action="decline")
        with contextlib.ExitStack() as stack:
            for call in calls:
                stack.enter_context(call.paused())
            return await elicitor(params)
