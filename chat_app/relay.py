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
order tabs see is the order events happened. The window is a timer, not a task: a
window that closes with nothing waiting costs one callback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.layers import get_channel_layer

__all__ = [
    "RELAY_WINDOW_SECONDS",
    "STREAMED",
    "GroupRelay",
    "coalesce_streamed",
    "group_send_safely",
    "relay_message",
]

_log = logging.getLogger(__name__)

STREAMED = ("text_delta", "tool_update")
RELAY_WINDOW_SECONDS = 0.02
"""How long a streamed piece may wait to be merged with the next: a model streaming 50
pieces a second sends one about every 20 ms, so under load most frames carry several
pieces (one group message and one socket write for them), and a piece waits at most
this long, well inside the 50 ms added-latency budget of the streaming load benchmark."""
_MERGED_UPDATE_CHARS = 20_000
"""Merged tool output keeps its tail: tabs and run history show the last 20,000 characters."""


def coalesce_streamed(events: list[dict[str, Any]], *, parts: bool = False) -> list[dict[str, Any]]:
    """Merge runs of text deltas (and of one call's tool output) into single events.

    Other events pass through unchanged and in place. A merged event carries the last
    piece's ``seq``. With ``parts`` (frames for tabs) it also lists its pieces as
    ``[[seq, length], ...]``, lengths in UTF-16 code units as a browser counts them: a tab
    whose catch-up from history already holds the first pieces (it joined while they
    waited in a window) skips exactly those and renders the rest once.
    """
    merged: list[dict[str, Any]] = []
    pieces: dict[int, list[tuple[int, str]]] = {}
    """Index in ``merged`` → its pieces, for merged events only."""
    for event in events:
        last = merged[-1] if merged else None
        if (
            last is not None
            and event["type"] in STREAMED
            and last["type"] == event["type"]
            and last.get("call_id") == event.get("call_id")
        ):
            index = len(merged) - 1
            if index not in pieces:
                pieces[index] = [(last.get("seq", 0), last["text"])]
            pieces[index].append((event.get("seq", 0), event["text"]))
            text = last["text"] + event["text"]
            if event["type"] == "tool_update":
                text = text[-_MERGED_UPDATE_CHARS:]
            merged[-1] = {**event, "text": text}
        else:
            merged.append(dict(event))
    if parts:
        for index, merged_pieces in pieces.items():
            merged[index]["parts"] = _parts(merged_pieces, kept=len(merged[index]["text"]))
    return merged


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


async def group_send_safely(group: str, message: dict[str, Any]) -> None:
    """Send to a group; a broken channel layer must not take a turn down (history has it)."""
    try:
        await get_channel_layer().group_send(group, message)
    except Exception:
        _log.exception("could not relay to %r", group)


def relay_message(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The group message for ``events``: their frames, each JSON encoded once for all tabs."""
    return {"type": "chat.events", "frames": [json.dumps(event) for event in events]}


class GroupRelay:
    """Sends one conversation's events to its group; see the module docstring."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._waiting: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()
        self._window_until = 0.0
        """Loop time the open window closes at (0: none open). It gets a timer only when
        a piece waits in it: a lone piece's window costs nothing."""
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None
        """The last window's send, held so the loop's weak reference is not the only one."""

    async def send(self, *events: dict[str, Any]) -> None:
        """Send ``events`` (in order) after whatever is waiting; see the module docstring."""
        if not events:
            return
        streamed = all(event["type"] in STREAMED for event in events)
        loop = asyncio.get_running_loop()
        if streamed and loop.time() < self._window_until:
            self._waiting.extend(events)
            if self._timer is None:
                self._timer = loop.call_at(self._window_until, self._close_window)
            return
        # Every send happens under one lock, so no two paths interleave (a send to Redis
        # waits for the server).
        async with self._lock:
            # Closed first: a piece arriving while this send waits must queue behind it
            # on the lock, not join a window that is about to go.
            self._close_now()
            waiting, self._waiting = self._waiting, []
            await self._send_all(coalesce_streamed([*waiting, *events], parts=True))
            if streamed:
                self._window_until = loop.time() + RELAY_WINDOW_SECONDS

    def _close_now(self) -> None:
        self._window_until = 0.0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_window(self) -> None:
        self._timer = None
        self._window_until = 0.0
        if self._waiting:
            self._flushing = asyncio.ensure_future(self._send_waiting())

    async def _send_waiting(self) -> None:
        async with self._lock:
            waiting, self._waiting = self._waiting, []
            if not waiting:
                return
            self._close_now()
            await self._send_all(coalesce_streamed(waiting, parts=True))
            # More may come: they wait for the next window.
            self._window_until = asyncio.get_running_loop().time() + RELAY_WINDOW_SECONDS

    async def _send_all(self, events: list[dict[str, Any]]) -> None:
        await group_send_safely(self.group, relay_message(events))
