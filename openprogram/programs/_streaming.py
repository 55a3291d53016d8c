"""The ``on_update`` a tool body calls, bridged safely to the caller's callback.

A body may stream from the event loop (async tools) or from a worker thread
(sync tools). Every chunk goes into a bounded :class:`TailAccumulator` (kept as
the call's streamed output) and into a bounded pending buffer that is drained
on the event loop, so a slow consumer coalesces updates instead of queueing
unbounded memory, and the caller's callback always runs on the loop, in order.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from typing import Any

from openprogram.agent.types import OnUpdate
from openprogram.programs.results import TailAccumulator

__all__ = ["UpdateStream"]

_log = logging.getLogger(__name__)
_MAX_PENDING_CHARS = 64 * 1024
"""Most text held for a consumer between two drains: one that falls behind sees a
marker for what it missed instead of making the call hold a second full tail."""


class UpdateStream:
    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        capacity: int,
        consumer: OnUpdate | None,
        tool_name: str,
    ) -> None:
        self.tail = TailAccumulator(capacity)
        self._loop = loop
        self._consumer = consumer
        self._tool_name = tool_name
        self._pending = (
            TailAccumulator(min(capacity, _MAX_PENDING_CHARS)) if consumer is not None else None
        )
        self._drain_scheduled = False
        self._lock = threading.Lock()
        self._last_delivery: asyncio.Future[Any] | None = None
        self._closed = False

    def emit(self, chunk: str) -> None:
        """The callable handed to the body as ``on_update``."""
        if not isinstance(chunk, str):
            chunk = str(chunk)
        self.tail.append(chunk)
        if self._pending is None or self._closed:
            return  # a sync body that outlived its call: the caller has its result
        self._pending.append(chunk)
        with self._lock:
            if self._drain_scheduled:
                return
            self._drain_scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop closed under a runaway worker thread
            _log.debug("dropping update from tool %r: event loop closed", self._tool_name)

    def _drain(self) -> None:
        with self._lock:
            self._drain_scheduled = False
        if self._pending is None or self._consumer is None or not len(self._pending):
            return
        text = self._pending.take()
        try:
            outcome = self._consumer(text)
        except Exception:
            _log.exception("on_update consumer failed for tool %r", self._tool_name)
            return
        if inspect.isawaitable(outcome):
            previous = self._last_delivery
            self._last_delivery = asyncio.ensure_future(self._deliver_after(previous, outcome))

    async def _deliver_after(self, previous: asyncio.Future[Any] | None, outcome: Any) -> None:
        # Chain async deliveries so chunks reach the consumer in emission order.
        if previous is not None:
            await asyncio.shield(previous)
        try:
            await outcome
        except Exception:
            _log.exception("async on_update consumer failed for tool %r", self._tool_name)

    async def flush(self) -> None:
        """Deliver everything emitted so far and stop forwarding; call once, at the end."""
        self._drain()
        self._closed = True
        if self._last_delivery is not None:
            await self._last_delivery
