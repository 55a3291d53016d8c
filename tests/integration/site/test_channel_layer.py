"""The single-process channel layer behaves as Channels' in-memory layer, side by side."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

import pytest
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer, get_channel_layer

from core import channel_layer as local
from core.channel_layer import LocalChannelLayer

BOTH = pytest.mark.parametrize("layer_class", [LocalChannelLayer, InMemoryChannelLayer])


async def _nothing_arrives(layer, channel: str) -> bool:
    try:
        await asyncio.wait_for(layer.receive(channel), timeout=0.05)
    except TimeoutError:
        return True
    return False


def test_the_server_uses_it_when_there_is_no_redis():
    assert isinstance(get_channel_layer(), LocalChannelLayer)


@BOTH
async def test_every_member_of_a_group_gets_its_messages_in_order(layer_class):
    layer = layer_class(capacity=100)
    alice_tab, alice_other_tab = await layer.new_channel(), await layer.new_channel()
    for channel in (alice_tab, alice_other_tab):
        await layer.group_add("chat.1", channel)

    for number in range(5):
        await layer.group_send("chat.1", {"type": "chat.events", "n": number})

    for channel in (alice_tab, alice_other_tab):
        got = [(await layer.receive(channel))["n"] for _ in range(5)]
        assert got == [0, 1, 2, 3, 4]


@BOTH
async def test_bob_outside_the_group_gets_nothing(layer_class):
    layer = layer_class()
    alice_tab, bob_tab = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("chat.1", alice_tab)
    await layer.group_add("chat.2", bob_tab)

    await layer.group_send("chat.1", {"type": "chat.events", "text": "alice's"})

    assert (await layer.receive(alice_tab))["text"] == "alice's"
    assert await _nothing_arrives(layer, bob_tab)


@BOTH
async def test_a_discarded_member_gets_nothing_more(layer_class):
    layer = layer_class()
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)
    await layer.group_discard("chat.1", tab)

    await layer.group_send("chat.1", {"type": "x"})

    assert await _nothing_arrives(layer, tab)


@BOTH
async def test_a_full_member_loses_the_message_but_the_others_still_get_it(layer_class):
    layer = layer_class(capacity=1)
    full, fine = await layer.new_channel(), await layer.new_channel()
    await layer.send(full, {"type": "x", "n": -1})
    with pytest.raises(ChannelFull):
        await layer.send(full, {"type": "x", "n": -2})
    for channel in (full, fine):
        await layer.group_add("chat.1", channel)

    await layer.group_send("chat.1", {"type": "x", "n": 0})

    assert (await layer.receive(full))["n"] == -1
    assert (await layer.receive(fine))["n"] == 0
    assert await _nothing_arrives(layer, full)


@BOTH
async def test_a_receiver_gets_a_copy_taken_at_the_send(layer_class):
    layer = layer_class()
    tab, other = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("chat.1", tab)
    await layer.group_add("chat.1", other)
    when = datetime(2026, 12, 5, 21, 0)
    message = {"type": "chat.events", "frames": ['{"type": "text_delta"}'], "meta": {"at": when}}

    await layer.group_send("chat.1", message)
    message["frames"].append("changed after the send")
    message["meta"]["at"] = None

    got = await layer.receive(tab)
    assert got["frames"] == ['{"type": "text_delta"}'] and got["meta"] == {"at": when}
    got["frames"].append("changed by one receiver")
    assert (await layer.receive(other))["frames"] == ['{"type": "text_delta"}']


@BOTH
async def test_a_waiting_receiver_is_woken_by_a_send(layer_class):
    layer = layer_class()
    tab = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(tab))
    await asyncio.sleep(0)  # one loop turn: the receiver now waits on its empty channel
    assert not waiting.done()

    await layer.send(tab, {"type": "x", "n": 1})

    assert (await asyncio.wait_for(waiting, timeout=5))["n"] == 1


@BOTH
async def test_a_receiver_cancelled_after_a_message_reached_it_loses_nothing(layer_class):
    layer = layer_class()
    tab = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(tab))
    await asyncio.sleep(0)
    await layer.send(tab, {"type": "x", "n": 1})  # handed over, not yet run
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting

    assert (await asyncio.wait_for(layer.receive(tab), timeout=5))["n"] == 1


@BOTH
@pytest.mark.parametrize("name", ["chat 1", "x" * 200, 7])
async def test_an_invalid_group_name_is_refused(layer_class, name):
    layer = layer_class(capacity=100)
    with pytest.raises(TypeError):
        await layer.group_send(name, {"type": "chat.events"})
    with pytest.raises(TypeError):
        await layer.group_add(name, await layer.new_channel())


@BOTH
@pytest.mark.parametrize("name", ["tab 1", "x" * 200, None])
async def test_an_invalid_channel_name_is_refused(layer_class, name):
    layer = layer_class()
    with pytest.raises(TypeError):
        await layer.send(name, {"type": "x"})
    with pytest.raises(TypeError):
        await layer.receive(name)


@BOTH
async def test_an_expired_message_is_never_delivered_and_its_channel_leaves_the_group(
    layer_class, monkeypatch
):
    monkeypatch.setattr(local, "CLEAN_EVERY_SECONDS", 0.0)
    layer = layer_class(expiry=-1)  # every message is already expired
    tab, other = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("chat.1", tab)
    await layer.group_send("chat.1", {"type": "x"})

    assert await _nothing_arrives(layer, tab)

    # The tab's message expired unread: it is no member now; a new member still gets one.
    await layer.group_add("chat.1", other)
    layer.expiry = 60
    await layer.group_send("chat.1", {"type": "x", "n": 2})
    assert (await layer.receive(other))["n"] == 2
    assert await _nothing_arrives(layer, tab)


@BOTH
async def test_memberships_older_than_the_group_expiry_end(layer_class, monkeypatch):
    monkeypatch.setattr(local, "CLEAN_EVERY_SECONDS", 0.0)
    layer = layer_class(group_expiry=-10)
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)

    await layer.group_send("chat.1", {"type": "x"})

    assert await _nothing_arrives(layer, tab)


@BOTH
async def test_flush_forgets_every_channel_and_group(layer_class):
    layer = layer_class()
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)
    await layer.send(tab, {"type": "x"})

    await layer.flush()
    await layer.group_send("chat.1", {"type": "y"})

    assert await _nothing_arrives(layer, tab)


async def test_the_expiry_scan_runs_at_most_once_a_second_and_forgets_idle_channels(
    monkeypatch,
):
    layer = LocalChannelLayer()
    tabs = [await layer.new_channel() for _ in range(3)]
    for tab in tabs:
        await layer.group_add("chat.1", tab)
    await layer.group_send("chat.1", {"type": "x"})  # the first scan: nothing to drop
    for tab in tabs:
        await layer.receive(tab)
    lonely = await layer.new_channel()
    await layer.group_add("chat.2", lonely)
    await layer.group_send("chat.2", {"type": "x"})
    assert len(layer._channels) == 4  # three read and idle: within the second, not scanned

    monkeypatch.setattr(local, "CLEAN_EVERY_SECONDS", 0.0)
    await layer.group_send("chat.2", {"type": "y"})  # scans first: the idle channels go

    assert set(layer._channels) == {lonely}
    assert layer.pending(lonely) == 2
    assert layer.members("chat.1") == frozenset(tabs)  # memberships stay: they did not expire
    await layer.group_send("chat.1", {"type": "z"})
    assert [(await layer.receive(tab))["type"] for tab in tabs] == ["z", "z", "z"]
