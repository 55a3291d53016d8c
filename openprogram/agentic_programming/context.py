"""The Context an Agent method call runs in, and the call tree it belongs to.

Every Agent method call, from Python or from the model, gets a :class:`Context`
derived from its parent's: one :class:`CallNode` in a :class:`CallTree`, a
:class:`~openprogram.agentic_programming.call_state.CancelToken` derived from
the parent's token, and the :class:`~openprogram.agentic_programming.call_state.Runtime`
(model and turn) it runs against. :func:`context` returns the current one, so a
method reaches its runtime without globals.
"""

from __future__ import annotations

import asyncio
import reprlib
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from openprogram.agentic_programming.call_state import CancelToken, Runtime

__all__ = [
    "CallNode",
    "CallStatus",
    "CallTree",
    "Context",
    "context",
    "current_call_tree",
]

CallStatus = Literal["running", "ok", "error", "cancelled"]
_PREVIEW_CHARS = 500


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _PREVIEW_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 20


def preview(value: Any, limit: int = _PREVIEW_CHARS) -> Any:
    """A JSON-safe, bounded rendering of an input or output for the call tree."""
    if value is None or isinstance(value, bool | int | float):
        return value
    # reprlib: a huge list or dict is never rendered whole just to be cut.
    text = value if isinstance(value, str) else _REPR.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more chars]"


@dataclass
class CallNode:
    """One method call: who called it, with what, and how it ended."""

    id: str
    parent_id: str | None
    method: str
    """``ClassName.method_name``."""
    inputs: dict[str, Any]
    tool_call_id: str | None = None
    """The model's call id when the model called this method as a tool."""
    status: CallStatus = "running"
    output: Any = None
    error: str | None = None
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    children: list[str] = field(default_factory=list)

    @property
    def duration_ms(self) -> float | None:
        if self.finished_at is None:
            return None
        return round((self.finished_at - self.started_at) * 1000, 3)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "method": self.method,
            "inputs": dict(self.inputs),
            "tool_call_id": self.tool_call_id,
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_ms": self.duration_ms,
            "children": list(self.children),
        }


class CallTree:
    """The calls of one turn (or one top-level Python call), parents before children."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, CallNode] = {}
        self._next = 0

    def new_id(self) -> str:
        with self._lock:
            self._next += 1
            return f"call-{self._next}"

    def add(self, node: CallNode) -> None:
        with self._lock:
            self._nodes[node.id] = node
            if node.parent_id is not None and node.parent_id in self._nodes:
                self._nodes[node.parent_id].children.append(node.id)

    def get(self, node_id: str) -> CallNode | None:
        return self._nodes.get(node_id)

    def roots(self) -> list[CallNode]:
        with self._lock:
            return [n for n in self._nodes.values() if n.parent_id is None]

    def nodes(self) -> list[CallNode]:
        with self._lock:
            return list(self._nodes.values())

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-safe nodes in start order, for run history."""
        return [node.to_dict() for node in self.nodes()]

    def __len__(self) -> int:
        return len(self._nodes)


class Context:
    """The scope of one method call: its node, cancellation and runtime."""

    def __init__(
        self,
        *,
        node: CallNode,
        tree: CallTree,
        token: CancelToken,
        runtime: Runtime,
        parent: Context | None,
        tool_names: frozenset[str] = frozenset(),
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.node = node
        self.tree = tree
        self.token = token
        self.runtime = runtime
        self.parent = parent
        self.tool_names = tool_names
        self.loop = loop
        """The event loop the turn runs on, for work a sync method hands back to it."""
        """Tool names of this call and every call it is nested in: a nested model
        run is not offered them, so a method cannot recurse into itself forever."""

    @property
    def id(self) -> str:
        return self.node.id

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel this call and every call nested in it."""
        self.token.cancel(reason)

    def on_cancel(self, hook: Any) -> Any:
        """Run ``hook(reason)`` when this call is cancelled; returns a remover."""
        return self.token.on_cancel(hook)

    def raise_if_cancelled(self) -> None:
        """Raise :class:`CallCancelled` if this call was cancelled: a cheap checkpoint."""
        self.token.raise_if_cancelled(repr(self.node.method))

    def __repr__(self) -> str:
        return f"<Context {self.node.id} {self.node.method!r} {self.node.status}>"


current_context: ContextVar[Context | None] = ContextVar("openprogram_agent_context", default=None)


def context() -> Context | None:
    """The Context of the Agent method call running now, or None outside any."""
    return current_context.get()


def current_call_tree() -> CallTree | None:
    """The call tree the running method call belongs to, or None outside any."""
    ctx = current_context.get()
    return ctx.tree if ctx is not None else None
