"""A relayed message from the group send to each socket's handler: each layer with each consumer loop.

100 sockets each join a group of their own (one tab per streaming chat); every round
sends one group message to each of them, spaced as a streaming load spaces them, and
waits until every handler ran. Each combination of channel layer (Channels'
``InMemoryChannelLayer``, ours: ``core.channel_layer``) and consumer loop (Channels'
``await_many_dispatch``, ours: ``core.consumer_loop.dispatch_from``) is run in turn, the
order rotating each round, so drift hits all alike. Prints CPU per message (median of
the rounds) and the turns of the event loop from the send to the handler, the latency
that matters when each turn of a busy loop takes milliseconds.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time

__all__ = ["main"]

_SOCKETS = 100
_MESSAGES = 30  # per socket and round
_ROUNDS = 7


async def _run(layer_class, loop_function) -> tuple[float, int]:
    layer = layer_class(capacity=1000)
    handled = 0
    turns_at_send: dict[int, int] = {}
    turns_taken: list[int] = []
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        ticker[0] = asyncio.get_running_loop().call_soon(tick)

    never = asyncio.Event()

    async def asgi_receive() -> dict:
        await never.wait()
        return {}

    async def dispatch(message: dict) -> None:
        nonlocal handled
        handled += 1
        sent = turns_at_send.pop(message["id"], None)
        if sent is not None:
            turns_taken.append(ticks - sent)

    sockets = []
    for index in range(_SOCKETS):
        channel = await layer.new_channel()
        await layer.group_add(f"chat.{index}", channel)
        receive = functools.partial(layer.receive, channel)
        sockets.append(asyncio.ensure_future(loop_function([asgi_receive, receive], dispatch)))
    await asyncio.sleep(0.01)
    ticker = [asyncio.get_running_loop().call_soon(tick)]
    started = time.process_time()
    for number in range(_MESSAGES):
        for index in range(_SOCKETS):
            message_id = number * _SOCKETS + index
            if index == 0:  # one message a round is timed in turns (a lone send)
                turns_at_send[message_id] = ticks
            await layer.group_send(
                f"chat.{index}", {"type": "chat.events", "frames": ["x" * 80], "id": message_id}
            )
        while handled < (number + 1) * _SOCKETS:
            await asyncio.sleep(0)
    cpu = time.process_time() - started
    ticker[0].cancel()
    for socket in sockets:
        socket.cancel()
    await asyncio.gather(*sockets, return_exceptions=True)
    return cpu / (_SOCKETS * _MESSAGES) * 1e6, int(statistics.median(turns_taken))


def main() -> None:
    from channels.layers import InMemoryChannelLayer
    from channels.utils import await_many_dispatch

    from bench._util import print_table
    from core.channel_layer import LocalChannelLayer
    from core.consumer_loop import dispatch_from

    combos = [
        (
            "Channels' in-memory layer",
            "Channels' await_many_dispatch",
            InMemoryChannelLayer,
            await_many_dispatch,
        ),
        (
            "ours (core/channel_layer.py)",
            "Channels' await_many_dispatch",
            LocalChannelLayer,
            await_many_dispatch,
        ),
        (
            "ours (core/channel_layer.py)",
            "ours (core/consumer_loop.py)",
            LocalChannelLayer,
            dispatch_from,
        ),
    ]
    cpu: dict[int, list[float]] = {i: [] for i in range(len(combos))}
    turns: dict[int, int] = {}
    for round_number in range(_ROUNDS):
        order = list(range(len(combos)))
        order = order[round_number % len(order) :] + order[: round_number % len(order)]
        for i in order:
            per_message, taken = asyncio.run(_run(combos[i][2], combos[i][3]))
            cpu[i].append(per_message)
            turns[i] = taken
    first = statistics.median(cpu[0])
    rows = []
    for i, (layer_name, loop_name, _, _) in enumerate(combos):
        median = statistics.median(cpu[i])
        rows.append([layer_name, loop_name, f"{median:.1f} µs", f"{median / first:.2f}×", turns[i]])
    print_table(
        f"A group message to each of {_SOCKETS} sockets, send → handler (median of {_ROUNDS} rounds)",
        [
            "channel layer",
            "consumer loop",
            "CPU per message",
            "vs Channels' own",
            "turns of the loop",
        ],
        rows,
    )
