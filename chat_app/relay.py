"""Relaying a turn's events to every open tab of its conversation, in order.

One channel-layer message carries a list of events, in order: a turn hands over
what it has in one go, so a tab gets one message per step of the turn rather than
one per event. (channels-redis puts every socket of a process behind one Redis list
with one capacity; one message per event filled it under load and the layer
dropped the rest without a word: tabs that never saw ``turn_finished``.) The events
travel as their WebSocket frames, JSON encoded once here (``frames``), not once per
tab: a consumer writes them as they are (``chat_app.consumers``).

A fast tool can call ``on_update`` thousands of times a second and a model streams
tens of pieces a second, so streamed events (text deltas, tool output) arriving close
together are merged: the first one after a quiet spell, or after any other event (so
the first text of every model call), goes out at once and opens a short window; those
arriving inside it wait and go out merged when it closes, and the window reopens
while they keep coming. Pieces that queued while the server was busy reach the relay
together and go out as one frame. Any other event first sends what is waiting, so the
order tabs see is the order events happened.

A streaming model keeps a window closing every 20 ms for each turn, so closing one is
made cheap. A window gets a timer only when a piece waits in it, and windows closing
within a millisecond of each other (turns whose pieces arrived in the same turn of the
event loop) share one timer (:class:`chat_app.shared_timers.SharedTimers`), so a window
may close up to a millisecond early; a piece arriving in that last millisecond goes out
at once instead of waiting alone for a timer (a model streaming at the window's own pace
would otherwise have nearly every piece wait, and each window reopen a little later
than the last, so that the waits grew by the timer's lateness piece after piece). The
timer's callback sends the window's pieces itself through the single-process layer, which
never waits (``LocalChannelLayer.group_send_nowait``); with Redis it starts a task that
sends them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from json.encoder import encode_basestring_ascii
from typing import Any

from channels.layers import get_channel_layer

from chat_app.shared_timers import SharedTimers
from core.channel_layer import LocalChannelLayer

__all__ = [
    "RELAY_WINDOW_SECONDS",
    "STREAMED",
    "GroupRelay",
    "coalesce_streamed",
    "event_frame",
    "group_send_safely",
    "relay_message",
]

_log = logging.getLogger(__name__)

STREAMED = ("text_delta", "tool_update")
RELAY_WINDOW_SECONDS = 0.02
"""How long a streamed piece may wait to be merged with the next: a model streaming 50
pieces a second sends one about every 20 ms, so under load most frames carry several
pieces (one group message and one socket write for them), and on a loop that keeps up
a piece waits at most this long. The window does not widen when the loop runs late
(docs/decisions/relay-delivery.md: that cost more latency than the frames it saved)."""

_SHARED_TIMER_SECONDS = 0.001
"""Windows closing this close together share a timer; a window may close this much early."""
_MERGED_UPDATE_CHARS = 20_000
"""Merged tool output keeps its tail: tabs and run history show the last 20,000 characters."""


def coalesce_streamed(events: list[dict[str, Any]], *, parts: bool = False) -> list[dict[str, Any]]:
    """Merge runs of text deltas (and of one call's tool output) into single events.

    Other events pass through unchanged and in place (as copies). A merged event carries
    the last piece's ``seq``. With ``parts`` (frames for tabs) it also lists its pieces as
    ``[[seq, length], ...]``, lengths in UTF-16 code units as a browser counts them: a tab
    whose catch-up from history already holds the first pieces (it joined while they
    waited in a window) skips exactly those and renders the rest once.
    """
    merged: list[dict[str, Any]] = []
    runs: dict[int, list[dict[str, Any]]] = {}
    """Index in ``merged`` → the pieces merged there (two or more), each merged once."""
    last: dict[str, Any] | None = None
    for event in events:
        if (
            last is not None
            and event["type"] in STREAMED
            and last["type"] == event["type"]
            and last.get("call_id") == event.get("call_id")
        ):
            index = len(merged) - 1
            run = runs.get(index)
            if run is None:
                runs[index] = [last, event]
            else:
                run.append(event)
        else:
            merged.append(event)
        last = event
    out = [dict(event) for event in merged]
    for index, run in runs.items():
        text = "".join(piece["text"] for piece in run)
        if run[-1]["type"] == "tool_update":
            text = text[-_MERGED_UPDATE_CHARS:]
        out[index] = {**run[-1], "text": text}
        if parts:
            pieces = [(piece.get("seq", 0), piece["text"]) for piece in run]
            out[index]["parts"] = _parts(pieces, kept=len(text))
    return out


def _parts(pieces: list[tuple[int, str]], *, kept: int) -> list[list[int]]:
    """``[seq, UTF-16 length]`` of each piece in the ``kept`` last characters."""
    out: list[list[int]] = []
    for seq, text in reversed(pieces):
        if kept <= 0:
            break
        visible = text[-kept:]
        kept -= len(visible)
        out.append([seq, len(visible.encode("utf-16-le")) // 2])
    out.reverse()
    return out


_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
"""Compact JSON; events are fresh dicts of JSON values, never circular."""
_DELTA_KEYS = {"type", "text", "seq", "run_id"}


def event_frame(event: dict[str, Any]) -> str:
    """One event's WebSocket frame (JSON). A lone text delta, most frames of a streaming
    turn, is written out directly: a quarter of what the encoder takes for it."""
    if event.keys() == _DELTA_KEYS and event["type"] == "text_delta":
        text, seq, run_id = event["text"], event["seq"], event["run_id"]
        if type(text) is str and type(seq) is int and type(run_id) is int:
            return (
                f'{{"type":"text_delta","text":{encode_basestring_ascii(text)},'
                f'"seq":{seq},"run_id":{run_id}}}'
            )
    return _encode(event)


async def group_send_safely(group: str, message: dict[str, Any], *, layer: Any = None) -> None:
    """Send to a group; a broken channel layer must not take a turn down (history has it)."""
    try:
        await (layer or get_channel_layer()).group_send(group, message)
    except Exception:
        _log.exception("could not relay to %r", group)


def relay_message(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The group message for ``events``: their frames, each JSON encoded once for all tabs."""
    return {"type": "chat.events", "frames": [event_frame(event) for event in events]}


class GroupRelay:
    """Sends one conversation's events to its group; see the module docstring."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._layer = get_channel_layer()
        self._waiting: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()
        self._window_until = 0.0
        """Loop time the open window closes at (0: none open). It gets a timer only when
        a piece waits in it: a lone piece's window costs nothing."""
        self._timer: list[GroupRelay] | None = None
        """The shared timer that closes the open window (its list of windows), if any."""
        self._flushing: asyncio.Task[None] | None = None
        """The last window's send, held so the loop's weak reference is not the only one."""
        self._send_nowait = (
            self._layer.group_send_nowait if isinstance(self._layer, LocalChannelLayer) else None
        )
        """A layer that never waits sends a closing window's pieces from the timer's
        callback; any other (Redis) sends them in a task the callback starts."""

    async def send(self, *events: dict[str, Any]) -> None:
        """Send ``events`` (in order) after whatever is waiting; see the module docstring."""
        if not events:
            return
        if len(events) == 1:
            streamed = events[0]["type"] in STREAMED
        else:
            streamed = all(event["type"] in STREAMED for event in events)
        loop = asyncio.get_running_loop()
        # A window may close up to _SHARED_TIMER_SECONDS early: a piece arriving in its
        # last moment goes out now rather than wait alone for a timer (module docstring).
        if streamed and loop.time() < self._window_until - _SHARED_TIMER_SECONDS:
            self._waiting.extend(events)
            if self._timer is None:
                self._timer = _window_timers.at(loop, self._window_until, self)
            return
        # Every send happens under one lock, so no two paths interleave (a send to Redis
        # waits for the server).
        async with self._lock:
            # Closed first: a piece arriving while this send waits must queue behind it
            # on the lock, not join a window that is about to go.
            self._window_until, self._timer = 0.0, None
            waiting, self._waiting = self._waiting, []
            if waiting or len(events) > 1:
                await self._send_all(coalesce_streamed([*waiting, *events], parts=True))
            else:  # nothing to merge
                await self._send_all(events)
            if streamed:
                self._reopen_window()

    def close_window(self, timer: list[GroupRelay]) -> None:
        """``timer`` went off: if it still closes this window, the window's time is up."""
        if self._timer is not timer:
            return  # an event went out since and closed it
        self._timer = None
        self._window_until = 0.0
        if not self._waiting:
            return
        if self._send_nowait is not None and not self._lock.locked():
            # The single-process layer sends at once, here in the timer's callback.
            events = self._take_waiting()
            try:
                self._send_nowait(self.group, relay_message(events))
            except Exception:
                _log.exception("could not relay to %r", self.group)
            self._reopen_window()
            return
        self._flushing = asyncio.ensure_future(self._send_waiting())

    async def _send_waiting(self) -> None:
        async with self._lock:
            if not self._waiting:
                return
            events = self._take_waiting()
            await self._send_all(events)
            self._reopen_window()  # more may come: they wait for the next window

    def _take_waiting(self) -> list[dict[str, Any]]:
        """The waiting pieces, merged (a lone one, most windows at a model's pace, as it
        is); the window is closed."""
        waiting, self._waiting = self._waiting, []
        self._window_until, self._timer = 0.0, None
        return waiting if len(waiting) == 1 else coalesce_streamed(waiting, parts=True)

    def _reopen_window(self) -> None:
        loop = asyncio.get_running_loop()
        self._window_until = loop.time() + RELAY_WINDOW_SECONDS

    async def _send_all(self, events: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> None:
        await group_send_safely(self.group, relay_message(list(events)), layer=self._layer)


_window_timers: SharedTimers[GroupRelay] = SharedTimers(
    early=_SHARED_TIMER_SECONDS, fire=GroupRelay.close_window
)
