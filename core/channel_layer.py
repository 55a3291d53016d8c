"""The single-process channel layer: Channels' in-memory semantics, at a streaming chat's pace.

A streaming turn sends a group message every ~20 ms and every tab's consumer receives
it, so 100 streaming chats make thousands of messages a second. Channels'
``InMemoryChannelLayer`` is built for tests: each send and receive scans every channel
and group for expired messages (O(sockets) per message), validates the names with a
regular expression, deep-copies the message, sends to a group through one task per
member, and makes a new ``asyncio.Queue`` whenever a channel's queue runs empty. Under
that load it took a fifth of the server's CPU.

This layer implements the channel layer interface on Channels' public base class
(``BaseChannelLayer``; the ``groups`` and ``flush`` extensions) and keeps the in-memory
layer's behaviour, which the tests check side by side:

- a message is a copy taken at the send (a change to it afterwards reaches nobody);
- a channel holds at most its capacity (``capacity``, ``channel_capacity``); a send past
  it raises ``ChannelFull``, and ``group_send`` drops the message for that member only;
- messages expire after ``expiry`` seconds, group memberships after ``group_expiry``; a
  channel whose message expired unread (its consumer is gone) leaves every group;
- names are checked as Channels checks them, once per channel and group;
- a group's members get their messages in order, one after another.

What it does differently, and why that is safe: the expiry scan of every channel runs at
most once a second (:data:`CLEAN_EVERY_SECONDS`; an expired message is never delivered,
each receive checks its head), a receiver waiting on an empty channel is handed the
message directly, a group send can be made from a plain callback (``group_send_nowait``),
and a JSON-shaped message (dicts, lists, strings, numbers) is copied by walking it rather
than by ``copy.deepcopy``'s general machinery (anything else still goes through
``deepcopy``). Decision record: ``docs/decisions/local-channel-layer.md``.
"""

from __future__ import annotations

import asyncio
import random
import string
import time
from collections import deque
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

__all__ = ["CLEAN_EVERY_SECONDS", "LocalChannelLayer"]

CLEAN_EVERY_SECONDS = 1.0
"""The scan for expired messages and memberships runs at most this often."""

_SHARED = frozenset({str, int, float, bool, bytes, type(None)})
"""Immutable leaves a copied message may share with the original."""


def _copied(value: Any) -> Any:
    """A deep copy of a message: JSON shapes walked directly (immutable leaves shared, not
    visited), anything else through ``deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SHARED else _copied(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SHARED else _copied(v) for v in value]
    if kind in _SHARED:
        return value
    if kind is tuple:
        return tuple(_copied(v) for v in value)
    return deepcopy(value)


class _Channel:
    """One channel's queued messages (``(expires at, message)``, oldest first) and the
    receivers waiting on it while it is empty."""

    __slots__ = ("capacity", "messages", "waiters")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.messages: deque[tuple[float, dict[str, Any]]] = deque()
        self.waiters: deque[asyncio.Future[dict[str, Any]]] = deque()


class LocalChannelLayer(BaseChannelLayer):
    """See the module docstring; configured in ``CHANNEL_LAYERS`` without Redis."""

    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: int = 60,
        group_expiry: int = 86400,
        capacity: int = 100,
        channel_capacity: dict[Any, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, **kwargs)
        self.channel_capacity = self.compile_capacities(channel_capacity or {})
        self.group_expiry = group_expiry
        self._channels: dict[str, _Channel] = {}
        self._groups: dict[str, dict[str, float]] = {}
        """Group → its members, each with the time (``time.time()``) it joined."""
        self._cleaned_at = float("-inf")

    # The channel layer interface

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """Queue a copy of ``message`` on ``channel`` (``ChannelFull`` past its capacity)."""
        assert isinstance(message, dict), "message is not a dict"
        assert "__asgi_channel__" not in message
        box = self._channels.get(channel) or self._open(channel)
        self._put(box, channel, message)

    async def receive(self, channel: str) -> dict[str, Any]:
        """The next unexpired message on ``channel``, waiting for one if there is none."""
        self._sweep()
        box = self._channels.get(channel) or self._open(channel)
        now = time.time()
        while box.messages:
            expires, message = box.messages.popleft()
            if expires >= now:
                return message
            self._leave_groups(channel)  # expired unread: its receiver was gone
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        box.waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                # Handed a message just as this receiver was cancelled: it goes back first.
                kept = self._channels.get(channel) or self._open(channel)
                kept.messages.appendleft((time.time() + self.expiry, waiter.result()))
            raise
        finally:
            if waiter in box.waiters:
                box.waiters.remove(waiter)

    async def new_channel(self, prefix: str = "specific.") -> str:
        """A new channel name for a receiver in this process."""
        return f"{prefix}.inmemory!{''.join(random.choices(string.ascii_letters, k=12))}"

    async def flush(self) -> None:
        self._channels = {}
        self._groups = {}

    async def close(self) -> None:
        """Nothing to close: everything lives in this process's memory."""

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self._groups.setdefault(group, {})[channel] = time.time()

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_channel_name(channel)
        self.require_valid_group_name(group)
        members = self._groups.get(group)
        if members:
            members.pop(channel, None)
            if not members:
                del self._groups[group]

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """A copy of ``message`` to each member in turn; a full member loses it."""
        self.group_send_nowait(group, message)

    def group_send_nowait(self, group: str, message: dict[str, Any]) -> None:
        """:meth:`group_send` without the ``await``: this layer never waits, so a plain
        callback (a timer's, ``chat_app.relay``) can send without starting a task."""
        assert isinstance(message, dict), "Message is not a dict"
        members = self._groups.get(group)
        if members is None:
            self.require_valid_group_name(group)
            return
        self._sweep()
        for channel in list(members):
            box = self._channels.get(channel) or self._open(channel)
            try:
                self._put(box, channel, message)
            except ChannelFull:
                continue  # that member loses it, as in Channels

    # For tests and diagnostics

    def pending(self, channel: str) -> int:
        """How many messages wait on ``channel``."""
        box = self._channels.get(channel)
        return len(box.messages) if box else 0

    def members(self, group: str) -> frozenset[str]:
        """The channels in ``group``."""
        return frozenset(self._groups.get(group, ()))

    # Inside

    def _open(self, channel: str) -> _Channel:
        self.require_valid_channel_name(channel)
        box = self._channels[channel] = _Channel(self.get_capacity(channel))
        return box

    def _put(self, box: _Channel, channel: str, message: dict[str, Any]) -> None:
        copy = _copied(message)
        while box.waiters:
            waiter = box.waiters.popleft()
            if not waiter.done():
                waiter.set_result(copy)
                return
        if len(box.messages) >= box.capacity:
            raise ChannelFull(channel)
        box.messages.append((time.time() + self.expiry, copy))

    def _leave_groups(self, channel: str) -> None:
        for members in self._groups.values():
            members.pop(channel, None)

    def _sweep(self) -> None:
        """At most once every :data:`CLEAN_EVERY_SECONDS`: expired messages go (a channel
        with one leaves every group: its receiver is gone), so do memberships older than
        ``group_expiry`` and channels with nothing queued and nobody waiting."""
        now = time.monotonic()
        if now - self._cleaned_at < CLEAN_EVERY_SECONDS:
            return
        self._cleaned_at = now
        wall = time.time()
        for channel, box in list(self._channels.items()):
            if box.messages and box.messages[0][0] < wall:
                while box.messages and box.messages[0][0] < wall:
                    box.messages.popleft()
                self._leave_groups(channel)
            if not box.messages and not box.waiters:
                del self._channels[channel]
        joined_before = wall - self.group_expiry
        for group, members in list(self._groups.items()):
            for channel, joined in list(members.items()):
                if joined < joined_before:
                    del members[channel]
            if not members:
                del self._groups[group]
