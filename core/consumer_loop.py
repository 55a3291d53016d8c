"""A consumer's receive loop with one hand-over per message: Channels' delivery, fewer turns.

Channels' ``AsyncConsumer.__call__`` gives a consumer's two sources (the ASGI ``receive``
and ``channel_layer.receive``) to ``channels.utils.await_many_dispatch``, which for every
message starts a new task for that source's next receive and runs ``asyncio.wait`` over
both. A group message therefore waits three turns of the event loop before its handler
runs (the receive task resumes; ``asyncio.wait``'s completion callback; the consumer's
task), and costs a task, a waiter and four done-callbacks. A streaming chat sends a group
message to each tab every window (~20 ms), so on a busy process those turns are most of a
piece's latency (docs/decisions/consumer-loop.md).

:class:`InboxDispatch` keeps Channels' delivery and its guarantees: messages still come
from the channel layer's ``receive`` and the server's ``receive``, and the consumer's own
task handles them one at a time, in the order they arrive, through ``dispatch``. Only the
loop differs: one long-lived task per source moves each message into a one-slot inbox,
and the consumer's task takes it from there, two turns after a send and about half the
CPU. The slot bounds what waits outside the layer to three messages (the inbox and one in
each source task), so the layer's capacity still applies to a consumer that falls behind.
A source that raises ends the consumer with that error, as with Channels; a handler's
``StopConsumer`` (a socket's disconnect) ends it cleanly; the source tasks never outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from channels.exceptions import StopConsumer
from channels.layers import get_channel_layer

__all__ = ["InboxDispatch", "dispatch_from"]

Message = dict[str, Any]


class _SourceFailed:
    """What a source task hands over instead of a message when its receive raised."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _pump(source: Callable[[], Awaitable[Message]], inbox: asyncio.Queue) -> None:
    while True:
        try:
            message = await source()
        except Exception as exc:  # the consumer re-raises it in its own task
            await inbox.put(_SourceFailed(exc))
            return
        await inbox.put(message)


async def dispatch_from(
    sources: list[Callable[[], Awaitable[Message]]],
    dispatch: Callable[[Message], Awaitable[None]],
) -> None:
    """Hand every message of ``sources`` to ``dispatch``, one at a time, until it raises.

    The drop-in for ``channels.utils.await_many_dispatch``: same arguments, same ending
    (an exception of ``dispatch`` or of a source propagates), same clean-up (the source
    tasks are cancelled and awaited before it returns).
    """
    inbox: asyncio.Queue[Message | _SourceFailed] = asyncio.Queue(maxsize=1)
    pumps = [asyncio.ensure_future(_pump(source, inbox)) for source in sources]
    try:
        while True:
            message = await inbox.get()
            if type(message) is _SourceFailed:
                raise message.error
            await dispatch(message)
    finally:
        for task in pumps:
            task.cancel()
        for task in pumps:
            with contextlib.suppress(asyncio.CancelledError):
                await task


class InboxDispatch:
    """Put first in an async consumer's bases: its ``__call__`` runs :func:`dispatch_from`.

    The set-up is Channels' own, through public names only (``channel_layer_alias``,
    ``get_channel_layer``, ``new_channel``; the consumer keeps ``channel_layer``,
    ``channel_name``, ``channel_receive`` and ``base_send`` as Channels documents them).
    For async consumers only: a sync consumer's handlers need Channels' thread hand-off.
    """

    channel_layer_alias: str
    dispatch: Callable[[Message], Awaitable[None]]

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        sources = [receive]
        if self.channel_layer is not None:
            self.channel_name = await self.channel_layer.new_channel()
            self.channel_receive = functools.partial(self.channel_layer.receive, self.channel_name)
            sources.append(self.channel_receive)
        self.base_send = send
        with contextlib.suppress(StopConsumer):  # a handler ended the socket
            await dispatch_from(sources, self.dispatch)
