"""Task-local call identity, runtime injection and cancellation hooks.

Everything here is carried by ``ContextVar``s, so it follows a call into
``asyncio`` tasks and into the worker thread a sync tool body runs in (both
copy the context), and it never leaks between concurrent turns.

* :class:`CancelToken` is a thread-safe cancellation flag with hooks. Every call
  scope owns one derived from its parent's, so cancelling an outer call (or the
  turn's Stop) cancels every nested call, whichever thread or loop it runs on.
* :class:`Runtime` is what a method reaches instead of globals: the model to
  call and the turn it runs in.
* :class:`ToolCallSite` is set by an Agent method's tool while the model's call
  runs, so the method's scope can record the model's ``call_id`` and inherit the
  tool's cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from openprogram.agent.context import TurnContext

__all__ = [
    "CallCancelled",
    "CancelToken",
    "Runtime",
    "ToolCallSite",
    "current_tool_call_site",
]

logger = logging.getLogger(__name__)


class CallCancelled(Exception):
    """The call, or one of the calls it is nested in, was cancelled."""


CancelHook = Callable[[str], object]
"""Called once with the cancellation reason."""


class CancelToken:
    """A cancellation flag that runs hooks once and cascades to child tokens.

    Safe to cancel from any thread: hooks run in the cancelling thread, so a
    hook that touches an ``asyncio`` object must hop to its loop itself
    (:meth:`link_event` does).
    """

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._lock = threading.Lock()
        self._hooks: list[CancelHook] = []
        self.reason: str | None = None
        self._detach: Callable[[], None] | None = (
            parent.on_cancel(self.cancel) if parent is not None else None
        )

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def child(self) -> CancelToken:
        return CancelToken(self)

    def detach(self) -> None:
        """Stop following the parent: a finished scope must not pile hooks on a long-lived one."""
        if self._detach is not None:
            self._detach()
            self._detach = None

    def on_cancel(self, hook: CancelHook) -> Callable[[], None]:
        """Run ``hook(reason)`` on cancellation (at once if already cancelled).

        Returns a function that removes the hook, for scopes that end first.
        """
        with self._lock:
            reason = self.reason
            if reason is None:
                self._hooks.append(hook)
        if reason is not None:
            self._run(hook, reason)

        def remove() -> None:
            with self._lock:
                if hook in self._hooks:
                    self._hooks.remove(hook)

        return remove

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            self._run(hook, reason)

    def raise_if_cancelled(self, what: str) -> None:
        if self.reason is not None:
            raise CallCancelled(f"{what} was cancelled: {self.reason}")

    def link_event(
        self, event: asyncio.Event, loop: asyncio.AbstractEventLoop
    ) -> Callable[[], None]:
        """Set ``event`` (owned by ``loop``) when this token is cancelled."""

        def _set(_reason: str) -> None:
            if loop.is_closed():
                return
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                event.set()
            else:
                loop.call_soon_threadsafe(event.set)

        return self.on_cancel(_set)

    @staticmethod
    def _run(hook: CancelHook, reason: str) -> None:
        # A failing hook must not stop the others: cancellation has to reach every call.
        try:
            hook(reason)
        except Exception:
            logger.exception("cancellation hook %r failed", hook)


@dataclass(frozen=True)
class Runtime:
    """What an Agent method runs against: the model to call and the turn it is in."""

    model: str
    turn: TurnContext | None = None


@dataclass
class ToolCallSite:
    """The model's call of an Agent method tool, waiting for the method's scope to claim it."""

    call_id: str
    tool_name: str
    token: CancelToken
    loop: asyncio.AbstractEventLoop | None
    claimed: bool = field(default=False)


current_tool_call_site: ContextVar[ToolCallSite | None] = ContextVar(
    "openprogram_agent_tool_call_site", default=None
)
