"""A running turn's event stream: numbered, written to run history, relayed to its tabs.

Every event is numbered (``seq``) and queued in the turn's outbox; a pump task hands
the outbox over step by step: what it holds is written to run history (``RunEvent``
rows, the model-call ledger) in one database job (``chat_app.turn_store.record``,
batched with other turns' jobs), and then sent to the group ``chat.<id>``, which every open tab
of the conversation joins, as one message. So history order is socket order and no
tab sees an event history lacks. Streamed events alone (text deltas, tool output) are
the exception: sent at once, written in coalesced batches at most 0.25 s later, so a
streaming model does not write one row per token. A streamed event with nothing queued
ahead of it skips the pump: buffered and relayed within ``emit``, so a streamed piece
costs no task of its own. Turns whose timed writes fall due within 50 ms of each other
share one timer (a write may come up to 50 ms early, never late), so their writes go to
the database in one batch however their turns' starts were spread out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from chat_app import turn_store
from chat_app.relay import STREAMED, GroupRelay, coalesce_streamed
from chat_app.shared_timers import SharedTimers

__all__ = ["TurnEvents"]

_log = logging.getLogger(__name__)

_FLUSH_AFTER_SECONDS = 0.25
_FLUSH_AFTER_CHARS = 8_000
_FLUSH_SHARED_SECONDS = 0.05
"""Timed writes due this close together share a timer (and so a database batch); a
write may come this much early, never late."""


class TurnEvents:
    """The event half of :class:`chat_app.turns.ActiveTurn` (which sets ``run_id``,
    ``owner_id``, ``seq`` and ``_run_cost`` and calls :meth:`_events_init`)."""

    run_id: int
    owner_id: int
    seq: int
    _run_cost: float

    def _events_init(self, *, group: str) -> None:
        self._outbox: list[dict[str, Any]] = []
        self._pump: asyncio.Task[None] | None = None
        self._history_error: Exception | None = None
        self._handed_seq = 0
        """Last seq handed over: written to history (or, streamed, buffered for it)."""
        self._handed_waiters: list[asyncio.Future[None]] = []
        self._buffer: list[dict[str, Any]] = []
        self._buffer_chars = 0
        self._persist_lock = asyncio.Lock()
        self._flush_timer: list[TurnEvents] | None = None
        """The shared timer due to write the buffer (its token), if one is set."""
        self._flush_due = 0.0
        """Loop time the buffer is to be written by (when ``_flush_timer`` is set)."""
        self._timed_flushes: set[asyncio.Future[None]] = set()
        self._relay = GroupRelay(group)

    async def emit(self, event: dict[str, Any]) -> dict[str, Any]:
        """Number one event and queue it for run history and every tab (module docstring).

        Returns at once; the outbox pump writes and relays it. A failure to write history
        raises here, at the next event, and ends the turn.
        """
        if self._history_error is not None:
            raise self._history_error
        self.seq += 1
        event = {**event, "seq": self.seq, "run_id": self.run_id}
        if event["type"] == "model_call":  # its ledger row is written with it (_history_write)
            self._run_cost += float(event.get("cost_usd") or 0.0)
        pump_idle = self._pump is None or self._pump.done()
        if (
            pump_idle
            and event["type"] in STREAMED
            and self._buffer_chars + len(event.get("text", "")) < _FLUSH_AFTER_CHARS
        ):
            # Nothing ahead of it (the outbox is empty while the pump is idle) and no
            # write due: what the pump would do, without a task.
            self._buffer_streamed([event])
            self._hand_over(event["seq"])
            await self._relay.send(event)
            return event
        self._outbox.append(event)
        if pump_idle:
            self._pump = asyncio.create_task(self._pump_outbox())
        return event

    async def relay_recorded(self, event: dict[str, Any]) -> None:
        """Number and relay an event the caller already wrote to run history as the next
        ``seq`` (a turn's ``user_message``, written by its start's database job): only
        before anything else was emitted, so history order stays socket order."""
        if self._outbox or (self._pump is not None and not self._pump.done()):
            raise RuntimeError("a recorded event is relayed only ahead of every other event")
        self.seq += 1
        self._hand_over(self.seq)
        await self._relay.send({**event, "seq": self.seq, "run_id": self.run_id})

    async def _pump_outbox(self) -> None:
        """Hand over everything queued, step by step: history first, then the tabs."""
        while self._outbox and self._history_error is None:
            events, self._outbox = self._outbox, []
            try:
                if all(event["type"] in STREAMED for event in events):
                    if self._buffer_streamed(events):
                        await self._write_history()
                else:
                    await self._write_history(extra=events)
            except Exception as exc:
                # Not relayed: a tab must never see what history does not have.
                _log.exception("could not write events of run %r", self.run_id)
                self._history_error = exc
                self._hand_over(self.seq)  # nothing more will be: stop the waiting
                return
            self._hand_over(events[-1]["seq"])
            await self._relay.send(*events)

    def _hand_over(self, seq: int) -> None:
        self._handed_seq = seq
        waiters, self._handed_waiters = self._handed_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _buffer_streamed(self, events: list[dict[str, Any]]) -> bool:
        """Buffer streamed events for history; True when the buffer is due for a write."""
        if not self._buffer:
            # Written within the window even if no further event ever comes (a model
            # that streams and then stalls, a server that dies): crash loss ≤ 0.25 s.
            loop = asyncio.get_running_loop()
            self._flush_due = loop.time() + _FLUSH_AFTER_SECONDS
            self._flush_timer = _flush_timers.at(loop, self._flush_due, self)
        self._buffer.extend(events)
        self._buffer_chars += sum(len(event.get("text", "")) for event in events)
        return self._buffer_chars >= _FLUSH_AFTER_CHARS

    def flush_on_timer(self, timer: list[TurnEvents]) -> None:
        if self._flush_timer is not timer:
            return  # written since (the timer is shared: it could not be cancelled)
        self._flush_timer = None
        task = asyncio.ensure_future(self._safe_flush())
        self._timed_flushes.add(task)
        task.add_done_callback(self._timed_flushes.discard)

    async def _safe_flush(self) -> None:
        try:
            await self._write_history()
        except Exception as exc:  # ends the turn at its next event, as a pump failure does
            _log.exception("could not write streamed events of run %r", self.run_id)
            self._history_error = self._history_error or exc
            self._hand_over(self._handed_seq)  # a waiting flush must hear of it

    async def _pump_idle(self) -> None:
        while self._pump is not None and not self._pump.done():
            await asyncio.wait({self._pump})

    async def flush(self) -> None:
        """Write everything emitted so far to run history; raise if that failed.

        Waits for the events emitted before the call only: a tool streaming without
        pause must not keep a tab's connect (which flushes first) waiting.
        """
        target = self.seq
        while self._handed_seq < target and self._history_error is None:
            waiter = asyncio.get_running_loop().create_future()
            self._handed_waiters.append(waiter)
            await waiter
        if self._history_error is not None:
            raise self._history_error
        await self._write_history()

    @property
    def history_failed(self) -> bool:
        return self._history_error is not None

    async def relay_unrecorded(self, *events: dict[str, Any]) -> None:
        """Send ``events`` to the tabs without writing them: only for telling the tabs a
        turn ended when history refused its events, so that no tab waits for an end that
        never comes. Numbered after everything emitted, so no tab drops them as seen."""
        await self._pump_idle()
        numbered = []
        for event in events:
            self.seq += 1
            numbered.append({**event, "seq": self.seq, "run_id": self.run_id})
        await self._relay.send(*numbered)

    async def _write_history(self, extra: list[dict[str, Any]] | None = None) -> None:
        """Write buffered streamed events (then ``extra``) to run history, in one job."""
        self._flush_timer = None  # nothing left for the timer when it goes off
        async with self._persist_lock:
            batch = coalesce_streamed([*self._buffer, *(extra or ())])
            self._buffer, self._buffer_chars = [], 0
            if batch:
                await turn_store.record(run_id=self.run_id, owner_id=self.owner_id, events=batch)


_flush_timers: SharedTimers[TurnEvents] = SharedTimers(
    early=_FLUSH_SHARED_SECONDS, fire=TurnEvents.flush_on_timer
)
