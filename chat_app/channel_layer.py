"""The single-process channel layer: Channels' in-memory layer with its per-message costs cut.

A streaming turn sends a group message every ~20 ms, and every tab's consumer receives
it. Channels' ``InMemoryChannelLayer`` scans every channel and group for expired
messages on each send and each receive (O(sockets) per message, so O(sockets²) for a
busy server), and sends to a group through one task per member gathered with
``as_completed``. Under 100 streaming chats that was a fifth of the server's CPU. Here
the scan runs at most once a second (messages expire after ``expiry``, 60 s: a second
more changes nothing) and a group's members are sent to in turn, in order. Messages,
capacity (``ChannelFull`` dropped for that member, as before) and expiry behave as in
Channels' layer.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

__all__ = ["LocalChannelLayer"]

_CLEAN_EVERY_SECONDS = 1.0


class LocalChannelLayer(InMemoryChannelLayer):
    """See the module docstring; configured in ``CHANNEL_LAYERS`` without Redis."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at < _CLEAN_EVERY_SECONDS:
            return
        self._cleaned_at = now
        super()._clean_expired()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):  # that member loses it, as in Channels
                await self.send(channel, message)
