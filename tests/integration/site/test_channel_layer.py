"""The single-process channel layer keeps Channels' in-memory semantics at a lower cost."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

from openprogram_site import daphne_patches
from openprogram_site.channel_layer import LocalChannelLayer


def test_the_server_uses_it_when_there_is_no_redis():
    assert isinstance(get_channel_layer(), LocalChannelLayer)


async def test_every_member_of_a_group_gets_its_messages_in_order():
    layer = LocalChannelLayer(capacity=100)
    alice_tab, alice_other_tab = await layer.new_channel(), await layer.new_channel()
    for channel in (alice_tab, alice_other_tab):
        await layer.group_add("chat.1", channel)

    for number in range(5):
        await layer.group_send("chat.1", {"type": "chat.events", "n": number})

    for channel in (alice_tab, alice_other_tab):
        got = [(await layer.receive(channel))["n"] for _ in range(5)]
        assert got == [0, 1, 2, 3, 4]


async def test_bob_outside_the_group_gets_nothing():
    layer = LocalChannelLayer()
    alice_tab, bob_tab = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("chat.1", alice_tab)
    await layer.group_add("chat.2", bob_tab)

    await layer.group_send("chat.1", {"type": "chat.events", "text": "alice's"})

    assert (await layer.receive(alice_tab))["text"] == "alice's"
    try:
        await asyncio.wait_for(layer.receive(bob_tab), timeout=0.05)
    except TimeoutError:
        pass
    else:
        raise AssertionError("bob's tab received alice's message")


async def test_a_full_member_loses_the_message_but_the_others_still_get_it():
    layer = LocalChannelLayer(capacity=1)
    full, fine = await layer.new_channel(), await layer.new_channel()
    await layer.send(full, {"type": "x", "n": -1})
    for channel in (full, fine):
        await layer.group_add("chat.1", channel)

    await layer.group_send("chat.1", {"type": "x", "n": 0})

    assert (await layer.receive(full))["n"] == -1
    assert (await layer.receive(fine))["n"] == 0


async def test_expired_messages_are_dropped_by_a_clean_at_most_once_a_second(monkeypatch):
    layer = LocalChannelLayer(expiry=-1)  # every message is already expired
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)
    await layer.group_send("chat.1", {"type": "x"})  # the first clean: nothing to drop yet
    await layer.group_send("chat.1", {"type": "x"})  # within the second: no clean
    assert layer.channels[tab].qsize() == 2

    monkeypatch.setattr(daphne_patches, "_CLEAN_EVERY_SECONDS", 0.0)
    await layer.group_send("chat.1", {"type": "x"})  # cleans: expired, dropped with the member

    assert tab not in layer.channels
    assert tab not in layer.groups["chat.1"]


async def test_a_consumer_gets_a_copy_of_the_message_through_its_queue():
    layer = LocalChannelLayer()
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)
    message = {"type": "chat.events", "frames": ['{"type": "text_delta"}']}

    await layer.group_send("chat.1", message)
    message["frames"].append("changed after the send")

    assert (await layer.receive(tab))["frames"] == ['{"type": "text_delta"}']


@pytest.mark.parametrize("name", ["chat 1", "x" * 200, 7])
async def test_a_send_to_a_group_with_an_invalid_name_is_refused_as_in_channels(name):
    layer = LocalChannelLayer(capacity=100)
    with pytest.raises(TypeError):
        await layer.group_send(name, {"type": "chat.events"})
