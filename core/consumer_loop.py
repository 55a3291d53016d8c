"""A consumer's receive loop with no hand-over between tasks: Channels' delivery, one turn.

Channels' ``AsyncConsumer.__call__`` gives a consumer's two sources (the ASGI ``receive``
and ``channel_layer.receive``) to ``channels.utils.await_many_dispatch``, which for every
message starts a new task for that source's next receive and runs ``asyncio.wait`` over
both. A group message therefore waits three turns of the event loop before its handler
runs (the receive task resumes; ``asyncio.wait``'s completion callback; the consumer's
task), and costs a task, a waiter and four done-callbacks. A streaming chat sends a group
message to each tab every window (~20 ms), so on a busy process those turns were most of
a piece's latency (docs/decisions/consumer-loop.md).

:func:`dispatch_from` keeps Channels' delivery and its guarantees: messages still come
from the channel layer's ``receive`` and the server's ``receive``, and the consumer
handles them one at a time, each source's in the order they come, through ``dispatch``.
Only the loop differs: each source has one long-lived task that receives a message and
handles it under a lock the sources share, then receives the next. A group message's
handler runs in the turn its receive resumes, one turn after the send; the next message
stays in the layer until the handler is done, so the layer's capacity applies as before.
A source that raises, or a handler that does (``StopConsumer`` on a socket's disconnect),
ends the loop with that error once a handler running in the other task has finished,
and no handler starts after it; no task outlives the loop. Handlers run in the sources'
tasks, so a ``contextvars`` value one handler sets is not seen by the other source's
(the chat consumer keeps its state on the instance).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from channels.exceptions import StopConsumer
from channels.layers import get_channel_layer

__all__ = ["ConsumerLoop", "dispatch_from"]

Message = dict[str, Any]


async def _serve(
    source: Callable[[], Awaitable[Message]],
    dispatch: Callable[[Message], Awaitable[None]],
    one_at_a_time: asyncio.Lock,
) -> None:
    """Receive from ``source`` and handle each message under the shared lock, for ever.

    When the source or a handler raises, the lock stays held: a handler running in the
    other task finishes first, and none starts after, as when Channels' one task handles
    everything in turn."""
    while True:
        try:
            message = await source()
        except Exception:
            await one_at_a_time.acquire()
            raise
        await one_at_a_time.acquire()
        await dispatch(message)  # raising here keeps the lock too
        one_at_a_time.release()


async def dispatch_from(
    sources: list[Callable[[], Awaitable[Message]]],
    dispatch: Callable[[Message], Awaitable[None]],
) -> None:
    """Hand every message of ``sources`` to ``dispatch``, one at a time, until one raises.

    The drop-in for ``channels.utils.await_many_dispatch``: same arguments, same ending
    (an exception of ``dispatch`` or of a source propagates), same clean-up (the source
    tasks are cancelled and awaited before it returns).
    """
    one_at_a_time = asyncio.Lock()
    tasks = [asyncio.ensure_future(_serve(s, dispatch, one_at_a_time)) for s in sources]
    try:
        # Each task loops until its source or a handler raises: the first to end says why.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                task.result()
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class ConsumerLoop:
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
