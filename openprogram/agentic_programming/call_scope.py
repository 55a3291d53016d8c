"""Entering and leaving an Agent method call's scope.

:class:`CallScope` is what the Agent class wraps around every method call,
sync or async, whoever calls it. On entry it runs the cancellation checkpoint
(a call nested in a cancelled one never starts), derives the Context from the
parent's (call tree node, cancel token, runtime) and installs it in the
ContextVar. On exit it records the terminal status, output or error and
timings, restores the ContextVars exactly as they were — also when the method
raised — and, for a root call inside a turn, publishes the turn's call tree
as a :class:`CallTreeUpdated` event so run history keeps it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from contextvars import Token
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

from openprogram.agent.context import TurnContext, get_turn
from openprogram.agent.events import Event
from openprogram.agentic_programming.call_state import (
    CallCancelled,
    CancelToken,
    Runtime,
    ToolCallSite,
    current_tool_call_site,
)
from openprogram.agentic_programming.context import (
    CallNode,
    CallStatus,
    CallTree,
    Context,
    current_context,
    preview,
)

__all__ = ["MAX_CALL_DEPTH", "CallDepthError", "CallScope", "CallTreeUpdated", "call_tree_for"]

logger = logging.getLogger(__name__)

MAX_CALL_DEPTH = 32
"""Nested Agent method calls allowed: a model that keeps calling back stops here."""
DEFAULT_MODEL = "offline"


class CallDepthError(RuntimeError):
    """Agent method calls nested deeper than :data:`MAX_CALL_DEPTH`."""


@dataclass
class CallTreeUpdated(Event):
    """The turn's Agent call tree, sent when a top-level Agent method call ends."""

    type: ClassVar[str] = "call_tree"
    root_id: str
    nodes: list[dict[str, Any]]


# One tree per turn, shared by every top-level call in it; dropped with the turn.
_turn_trees: dict[int, CallTree] = {}
_pending_emits: set[asyncio.Future[Any]] = set()


def call_tree_for(turn: TurnContext) -> CallTree | None:
    """The call tree of ``turn``'s Agent method calls so far, if it made any."""
    return _turn_trees.get(id(turn))


def _tree_for(turn: TurnContext | None) -> CallTree:
    if turn is None:
        return CallTree()
    tree = _turn_trees.get(id(turn))
    if tree is None:
        tree = _turn_trees[id(turn)] = CallTree()
        weakref.finalize(turn, _turn_trees.pop, id(turn), None)
    return tree


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class CallScope:
    """``with CallScope(...) as ctx`` / ``async with``: one method call's lifetime."""

    def __init__(
        self,
        *,
        method: str,
        inputs: dict[str, Any],
        tool_name: str | None = None,
        model: str | None = None,
    ) -> None:
        self._method = method
        self._inputs = inputs
        self._tool_name = tool_name
        self._model = model
        self._tokens: list[tuple[Any, Token[Any]]] = []
        self.context: Context | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- entry -----------------------------------------------------------------

    def _claim_site(self) -> ToolCallSite | None:
        site = current_tool_call_site.get()
        if site is None or site.claimed or site.tool_name != self._tool_name:
            return None
        site.claimed = True
        return site

    def enter(self) -> Context:
        parent = current_context.get()
        site = self._claim_site()
        if parent is not None:
            parent.raise_if_cancelled()
            if parent.depth + 1 >= MAX_CALL_DEPTH:
                raise CallDepthError(
                    f"{self._method!r} would nest deeper than {MAX_CALL_DEPTH} Agent method calls"
                )
        if site is not None:
            site.token.raise_if_cancelled(repr(self._method))
        turn = get_turn()
        parent_token = site.token if site is not None else (parent.token if parent else None)
        tree = parent.tree if parent is not None else _tree_for(turn)
        model = (
            self._model
            or (turn.model if turn is not None else None)
            or (parent.runtime.model if parent is not None else None)
            or DEFAULT_MODEL
        )
        node = CallNode(
            id=tree.new_id(),
            parent_id=parent.node.id if parent is not None else None,
            method=self._method,
            inputs={name: preview(value) for name, value in self._inputs.items()},
            tool_call_id=site.call_id if site is not None else None,
        )
        tree.add(node)
        names = parent.tool_names if parent is not None else frozenset()
        self.loop = (
            (site.loop if site is not None else None)
            or _running_loop()
            or (parent.loop if parent is not None else None)
        )
        ctx = Context(
            node=node,
            tree=tree,
            token=CancelToken(parent_token),
            runtime=Runtime(model=model, turn=turn),
            parent=parent,
            tool_names=names | {self._tool_name} if self._tool_name else names,
            loop=self.loop,
        )
        self._tokens.append((current_context, current_context.set(ctx)))
        # Calls made inside this one must not claim the model's call site again.
        self._tokens.append((current_tool_call_site, current_tool_call_site.set(None)))
        self.context = ctx
        return ctx

    # -- exit ------------------------------------------------------------------

    def _finish(self, result: Any, error: BaseException | None) -> CallTreeUpdated | None:
        ctx = self.context
        assert ctx is not None, "CallScope exited before it was entered"
        node = ctx.node
        status: CallStatus
        if error is None:
            status = "ok"
            node.output = preview(result)
        elif isinstance(error, CallCancelled | asyncio.CancelledError) or ctx.cancelled:
            status = "cancelled"
            node.error = str(error) or ctx.token.reason or "cancelled"
        else:
            status = "error"
            node.error = f"{type(error).__name__}: {error}"
        node.status = status
        node.finished_at = time.time()
        # A finished call stops following its parent (no hooks pile up on a
        # long-lived token) and its on_cancel hooks never fire.
        ctx.token.detach()
        for var, token in reversed(self._tokens):
            var.reset(token)
        self._tokens.clear()
        turn = ctx.runtime.turn
        if ctx.parent is None and turn is not None and turn.emit is not None:
            return CallTreeUpdated(root_id=node.id, nodes=ctx.tree.to_list())
        return None

    def exit(self, result: Any = None, error: BaseException | None = None) -> None:
        """Leave the scope from sync code; a tree event is sent without waiting."""
        event = self._finish(result, error)
        if event is not None:
            self._send_soon(event)

    async def aexit(self, result: Any = None, error: BaseException | None = None) -> None:
        event = self._finish(result, error)
        if event is not None:
            await self._send(event)

    async def _send(self, event: CallTreeUpdated) -> None:
        turn = self.context.runtime.turn if self.context else None
        if turn is None or turn.emit is None:
            return
        try:
            await turn.emit(event)
        except Exception:
            logger.exception("could not send the call tree of %r", event.root_id)

    def _send_soon(self, event: CallTreeUpdated) -> None:
        running = _running_loop()
        if running is not None:
            task = running.create_task(self._send(event))
        elif self.loop is not None and not self.loop.is_closed():
            task = asyncio.run_coroutine_threadsafe(self._send(event), self.loop)
        else:
            logger.debug("no event loop to send the call tree of %r", event.root_id)
            return
        _pending_emits.add(task)
        task.add_done_callback(_pending_emits.discard)

    # -- context manager protocol -------------------------------------------------

    def __enter__(self) -> Context:
        return self.enter()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.exit(error=exc)

    async def __aenter__(self) -> Context:
        return self.enter()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aexit(error=exc)
