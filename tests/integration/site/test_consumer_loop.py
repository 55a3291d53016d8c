"""A consumer's receive loop (core/consumer_loop.py) keeps Channels' delivery, in fewer turns.

Each behaviour is checked against ``channels.utils.await_many_dispatch`` side by side
where both should agree; the turn count is where they differ on purpose.
"""

from __future__ import annotations

import asyncio
import functools

import pytest
from channels.exceptions import ChannelFull
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.utils import await_many_dispatch

from core.channel_layer import LocalChannelLayer
from core.consumer_loop import ConsumerLoop, dispatch_from

BOTH = pytest.mark.parametrize("loop", [dispatch_from, await_many_dispatch])


class _Server:
    """The ASGI side of a socket: what the server hands the consumer's ``receive``."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue = asyncio.Queue()

    async def receive(self) -> dict:
        return await self.incoming.get()


class _Turns:
    """Counts turns of the event loop (one callback that reschedules itself)."""

    def __init__(self) -> None:
        self.count = 0
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


async def _until(predicate, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0)


@BOTH
async def test_messages_of_both_sources_are_handled_one_at_a_time_each_in_order(loop):
    layer, server = LocalChannelLayer(), _Server()
    channel = await layer.new_channel()
    handled, busy = [], []

    async def dispatch(message):
        busy.append(1)
        assert len(busy) == 1, "two messages handled at once"
        await asyncio.sleep(0)  # a handler that awaits lets the sources run meanwhile
        handled.append((message["type"], message["n"]))
        busy.pop()

    task = asyncio.ensure_future(
        loop([server.receive, functools.partial(layer.receive, channel)], dispatch)
    )
    for n in range(20):
        await layer.send(channel, {"type": "chat.events", "n": n})
        if n % 4 == 0:
            server.incoming.put_nowait({"type": "websocket.receive", "n": n})
    await _until(lambda: len(handled) == 25)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    assert [n for kind, n in handled if kind == "chat.events"] == list(range(20))
    assert [n for kind, n in handled if kind == "websocket.receive"] == [0, 4, 8, 12, 16]


async def test_a_group_message_reaches_its_handler_in_two_turns_not_three():
    turns_taken = {}
    for loop in (dispatch_from, await_many_dispatch):
        layer, server = LocalChannelLayer(), _Server()
        channel = await layer.new_channel()
        await layer.group_add("chat.1", channel)
        arrived = asyncio.Event()
        task = asyncio.ensure_future(
            loop(
                [server.receive, functools.partial(layer.receive, channel)],
                functools.partial(_handled, arrived),
            )
        )
        await asyncio.sleep(0.01)  # both sources are waiting
        turns = _Turns()
        await layer.group_send("chat.1", {"type": "chat.events"})
        sent_at = turns.count
        await arrived.wait()
        turns_taken[loop.__name__] = turns.count - sent_at
        turns.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    # Counted until this test's own task wakes, one turn after the handler: ours handles
    # the message in the turn its receive resumes; Channels' loop has asyncio.wait's
    # completion callback and the consumer's task after that.
    assert turns_taken == {"dispatch_from": 2, "await_many_dispatch": 4}


async def _ignore(message: dict) -> None:
    """A handler with nothing to do."""


async def _handled(event: asyncio.Event, message: dict) -> None:
    event.set()


async def test_a_consumer_that_falls_behind_leaves_its_messages_in_the_layer():
    layer, server = LocalChannelLayer(capacity=10), _Server()
    channel = await layer.new_channel()
    release = asyncio.Event()
    handled = []

    async def slow(message):
        await release.wait()
        handled.append(message["n"])

    task = asyncio.ensure_future(
        dispatch_from([server.receive, functools.partial(layer.receive, channel)], slow)
    )
    for n in range(11):
        await layer.send(channel, {"type": "chat.events", "n": n})
        await asyncio.sleep(0)
    # One in the handler: the rest wait in the layer, whose capacity still refuses more.
    await _until(lambda: layer.pending(channel) == 10)
    with pytest.raises(ChannelFull):
        await layer.send(channel, {"type": "chat.events", "n": 99})
    release.set()
    await _until(lambda: len(handled) == 11)
    assert handled == list(range(11))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_source_that_fails_lets_the_running_handler_finish_and_starts_no_other():
    """As with Channels' one task, the handler running when the layer fails completes;
    then the loop ends (Channels' may first handle a frame that was ready before it looked)."""
    server = _Server()
    started, finish, done = asyncio.Event(), asyncio.Event(), []
    failure = asyncio.get_running_loop().create_future()

    async def failing_layer() -> dict:
        await failure
        raise ConnectionResetError("the layer's server went away")

    async def dispatch(message):
        started.set()
        await finish.wait()
        done.append(message["n"])

    task = asyncio.ensure_future(dispatch_from([server.receive, failing_layer], dispatch))
    server.incoming.put_nowait({"type": "websocket.receive", "n": 1})
    await started.wait()
    failure.set_result(None)  # the layer fails while the client's frame is being handled
    server.incoming.put_nowait({"type": "websocket.receive", "n": 2})
    for _ in range(5):
        await asyncio.sleep(0)
    finish.set()
    with pytest.raises(ConnectionResetError):
        await task
    assert done == [1]  # finished, not cut off; the frame after the failure is not handled


@BOTH
async def test_a_source_that_fails_ends_the_loop_with_its_error_and_no_task_is_left(loop):
    async def broken() -> dict:
        raise ConnectionResetError("the layer's server went away")

    server = _Server()
    before = asyncio.all_tasks()
    with pytest.raises(ConnectionResetError, match="went away"):
        await loop([server.receive, broken], _ignore)
    assert asyncio.all_tasks() == before


@BOTH
async def test_cancelling_the_loop_leaves_no_source_task_behind(loop):
    layer, server = LocalChannelLayer(), _Server()
    channel = await layer.new_channel()
    before = asyncio.all_tasks()
    task = asyncio.ensure_future(
        loop([server.receive, functools.partial(layer.receive, channel)], _ignore)
    )
    await asyncio.sleep(0.01)
    await layer.send(channel, {"type": "chat.events", "n": 1})
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()
    assert asyncio.all_tasks() == before


class _Consumer(ConsumerLoop, AsyncJsonWebsocketConsumer):
    groups = ["room"]

    async def connect(self):
        await self.accept()

    async def chat_events(self, message):
        await self.send_json({"n": message["n"], "channel": self.channel_name})


@pytest.mark.django_db  # Channels' disconnect closes stale database connections
async def test_a_consumer_with_it_accepts_relays_and_stops_cleanly_on_disconnect(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "core.channel_layer.LocalChannelLayer"}}
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    server, sent = _Server(), []

    async def send(message):
        sent.append(message)

    before = asyncio.all_tasks()
    app = asyncio.ensure_future(
        _Consumer.as_asgi()({"type": "websocket", "path": "/ws/"}, server.receive, send)
    )
    server.incoming.put_nowait({"type": "websocket.connect"})
    await _until(lambda: sent and sent[0]["type"] == "websocket.accept")
    layer = channel_layers["default"]
    await layer.group_send("room", {"type": "chat.events", "n": 7})
    await _until(lambda: len(sent) == 2)
    assert '"n": 7' in sent[1]["text"]
    server.incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
    await asyncio.wait_for(app, 5)  # StopConsumer ends it without an error
    assert app.result() is None
    assert layer.members("room") == frozenset()
    assert asyncio.all_tasks() == before
    channel_layers.backends.clear()
