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

Direct delivery: a member in this process may take its group messages as a call
(:meth:`LocalChannelLayer.receive_directly`) instead of through its queue. A queued
message costs a deep copy, a queue, the consumer's receive task and Channels' dispatch
(about half of what relaying a streamed piece cost); a direct one is the handler's
call, in the sender's task, with the sender's message (handlers must not change it).
Messages sent to the channel itself (not to a group) still queue.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

__all__ = ["DirectHandler", "LocalChannelLayer"]

_log = logging.getLogger(__name__)

_CLEAN_EVERY_SECONDS = 1.0

DirectHandler = Callable[[dict[str, Any]], Awaitable[None]]


class LocalChannelLayer(InMemoryChannelLayer):
    """See the module docstring; configured in ``CHANNEL_LAYERS`` without Redis."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cleaned_at = 0.0
        self._direct: dict[str, DirectHandler] = {}

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at < _CLEAN_EVERY_SECONDS:
            return
        self._cleaned_at = now
        super()._clean_expired()
        # A consumer that ended without leaving (its task cancelled) is no member of any
        # group once its memberships expire: drop its handler with them.
        members = set().union(*self.groups.values())
        for channel in [channel for channel in self._direct if channel not in members]:
            del self._direct[channel]

    async def receive_directly(self, channel: str, handler: DirectHandler) -> None:
        """From now on, hand ``channel``'s group messages to ``handler`` as they are sent.

        What already waits in its queue goes to ``handler`` first, so the order holds.
        """
        queue = self.channels.get(channel)
        while queue is not None and not queue.empty():
            expires, message = queue.get_nowait()
            if expires >= time.time():
                await handler(message)
            queue = self.channels.get(channel)
        # No await between the last look at the queue and this: nothing can slip past.
        self._direct[channel] = handler

    def stop_receiving_directly(self, channel: str) -> None:
        self._direct.pop(channel, None)

    async def flush(self) -> None:
        await super().flush()
        self._direct.clear()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        if group not in self.groups:  # a member's group_add checked the name of one that is
            self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            handler = self._direct.get(channel)
            if handler is None:
                with contextlib.suppress(ChannelFull):  # that member loses it, as in Channels
                    await self.send(channel, message)
                continue
            try:
                await handler(message)
            except Exception:  # one broken member must not keep the message from the rest
                _log.exception("direct delivery to %r failed", channel)
