"""Relaying a turn's events to every open tab of its conversation, in order.

One channel-layer message carries a list of events, in order: a turn hands over
what it has in one go, so a tab gets one message per step of the turn rather than
one per event. (channels-redis puts every socket of a process behind one Redis list
with one capacity; one message per event filled it under load and the layer
dropped the rest without a word: tabs that never saw ``turn_finished``.)

A fast tool can call ``on_update`` thousands of times a second, so streamed events
(text deltas, tool output) arriving close together are also merged: the first one
after a quiet spell goes out at once and opens a short window; those arriving inside
it wait and go out merged when it closes. Any other event first sends what is
waiting, so the order tabs see is the order events happened.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import get_channel_layer

__all__ = [
    "RELAY_WINDOW_SECONDS",
    "STREAMED",
    "GroupRelay",
    "coalesce_streamed",
    "group_send_safely",
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


def coalesce_streamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge runs of text deltas (and of one call's tool output) into single events.

    Other events pass through unchanged and in place.
    """
    merged: list[dict[str, Any]] = []
    for event in events:
        last = merged[-1] if merged else None
        if (
            last is not None
            and event["type"] in STREAMED
            and last["type"] == event["type"]
            and last.get("call_id") == event.get("call_id")
        ):
            text = last["text"] + event["text"]
            if event["type"] == "tool_update":
                text = text[-_MERGED_UPDATE_CHARS:]
            merged[-1] = {**event, "text": text}
        else:
            merged.append(dict(event))
    return merged


async def group_send_safely(group: str, message: dict[str, Any]) -> None:
    """Send to a group; a broken channel layer must not take a turn down (history has it)."""
    try:
        await get_channel_layer().group_send(group, message)
    except Exception:
        _log.exception("could not relay to %r", group)


class GroupRelay:
    """Sends one conversation's events to its group; see the module docstring."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._waiting: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()
        self._window: asyncio.Task[None] | None = None

    async def send(self, *events: dict[str, Any]) -> None:
        """Send ``events`` (in order) after whatever is waiting; see the module docstring."""
        if not events:
            return
        # The window check and every send happen under one lock, so no two paths interleave.
        streamed = all(event["type"] in STREAMED for event in events)
        async with self._lock:
            if streamed and self._window is not None:
                self._waiting.extend(events)
                return
            waiting, self._waiting = self._waiting, []
            await self._send_all(coalesce_streamed([*waiting, *events]))
            if streamed:
                self._window = asyncio.create_task(self._close_window())

    async def _close_window(self) -> None:
        while True:
            await asyncio.sleep(RELAY_WINDOW_SECONDS)
            async with self._lock:
                waiting, self._waiting = self._waiting, []
                if not waiting:
                    self._window = None
                    return
                await self._send_all(coalesce_streamed(waiting))

    async def _send_all(self, events: list[dict[str, Any]]) -> None:
        await group_send_safely(self.group, {"type": "chat.events", "events": events})
