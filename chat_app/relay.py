"""Relaying a turn's events to every open tab of its conversation, in order.

A fast tool can call ``on_update`` thousands of times a second. One channel-layer
message per chunk would overflow a layer's per-channel capacity, and both the
in-memory layer and channels-redis drop what does not fit without a word. So
streamed events (text deltas, tool output) arriving close together are merged:
the first one after a quiet spell goes out at once and opens a short window;
those arriving inside it wait and go out merged when it closes. Any other event
first sends what is waiting, so the order tabs see is the order events happened.
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
RELAY_WINDOW_SECONDS = 0.005
_MERGED_UPDATE_CHARS = 20_000
"""Merged tool output keeps its tail: tabs and run history show the last 20,000 characters."""


def coalesce_streamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge runs of text deltas (and of one call's tool output) into single events."""
    merged: list[dict[str, Any]] = []
    for event in events:
        last = merged[-1] if merged else None
        if (
            last is not None
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

    async def send(self, event: dict[str, Any]) -> None:
        # The window check and every send happen under one lock, so no two paths interleave.
        streamed = event["type"] in STREAMED
        async with self._lock:
            if streamed and self._window is not None:
                self._waiting.append(event)
                return
            waiting, self._waiting = self._waiting, []
            await self._send_all([*coalesce_streamed(waiting), event])
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
        for event in events:
            await group_send_safely(self.group, {"type": "chat.event", "event": event})
