"""The single-process channel layer keeps Channels' in-memory semantics at a lower cost."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer

from chat_app.channel_layer import LocalChannelLayer


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


async def test_expired_messages_are_dropped_by_a_clean_at_most_once_a_second():
    layer = LocalChannelLayer(expiry=-1)  # every message is already expired
    tab, other_tab = await layer.new_channel(), await layer.new_channel()
    await layer.send(tab, {"type": "x"})

    layer._clean_expired()  # the first clean runs
    await layer.send(other_tab, {"type": "x"})
    layer._clean_expired()  # within the second: skipped

    assert tab not in layer.channels
    assert other_tab in layer.channels


async def test_a_tab_receiving_directly_gets_what_queued_before_it_then_the_rest_in_order():
    layer = LocalChannelLayer()
    tab, other_tab = await layer.new_channel(), await layer.new_channel()
    for channel in (tab, other_tab):
        await layer.group_add("chat.1", channel)
    await layer.group_send("chat.1", {"type": "chat.events", "n": 0})  # queued for both

    got: list[int] = []

    async def handler(message):
        got.append(message["n"])

    await layer.receive_directly(tab, handler)
    for number in (1, 2):
        await layer.group_send("chat.1", {"type": "chat.events", "n": number})

    assert got == [0, 1, 2]
    assert [(await layer.receive(other_tab))["n"] for _ in range(3)] == [0, 1, 2]


async def test_every_direct_tab_gets_the_senders_message_itself_not_a_copy():
    layer = LocalChannelLayer()
    received: list[dict] = []

    async def handler(message):
        received.append(message)

    for _ in range(2):
        channel = await layer.new_channel()
        await layer.group_add("chat.1", channel)
        await layer.receive_directly(channel, handler)
    message = {"type": "chat.events", "frames": ['{"type": "text_delta"}']}

    await layer.group_send("chat.1", message)

    assert len(received) == 2 and all(got is message for got in received)


async def test_a_broken_direct_tab_does_not_keep_the_message_from_the_others():
    layer = LocalChannelLayer()
    broken, fine = await layer.new_channel(), await layer.new_channel()
    got: list[int] = []

    async def fails(message):
        raise ConnectionError("the socket went away")

    async def collects(message):
        got.append(message["n"])

    for channel, handler in ((broken, fails), (fine, collects)):
        await layer.group_add("chat.1", channel)
        await layer.receive_directly(channel, handler)

    await layer.group_send("chat.1", {"type": "chat.events", "n": 7})

    assert got == [7]


async def test_a_tab_that_stops_receiving_directly_has_its_messages_queued_again():
    layer = LocalChannelLayer()
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)
    got: list[int] = []

    async def handler(message):
        got.append(message["n"])

    await layer.receive_directly(tab, handler)
    await layer.group_send("chat.1", {"type": "chat.events", "n": 1})
    layer.stop_receiving_directly(tab)
    await layer.group_send("chat.1", {"type": "chat.events", "n": 2})

    assert got == [1]
    assert (await layer.receive(tab))["n"] == 2


async def test_a_direct_handler_goes_with_the_tabs_last_expired_membership():
    layer = LocalChannelLayer(group_expiry=-1)  # every membership has already expired
    tab = await layer.new_channel()
    await layer.group_add("chat.1", tab)

    async def handler(message):
        raise AssertionError("an expired member must not be called")

    await layer.receive_directly(tab, handler)
    layer._clean_expired()

    assert tab not in layer._direct
    await layer.group_send("chat.1", {"type": "chat.events"})


@pytest.mark.parametrize("name", ["chat 1", "x" * 200, 7])
async def test_a_send_to_a_group_with_an_invalid_name_is_refused_as_in_channels(name):
    layer = LocalChannelLayer(capacity=100)
    with pytest.raises(TypeError):
        await layer.group_send(name, {"type": "chat.events"})
