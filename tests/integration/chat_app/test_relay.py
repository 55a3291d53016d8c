"""The relay merges bursts of streamed events, loses nothing and keeps the order."""

import asyncio

from channels.layers import get_channel_layer

from chat_app.relay import GroupRelay, coalesce_streamed


async def _receive_until_finished(layer, channel) -> list[dict]:
    events = []
    while True:
        message = await asyncio.wait_for(layer.receive(channel), timeout=5)
        events.append(message["event"])
        if message["event"]["type"] == "turn_finished":
            return events


async def test_a_burst_of_tool_output_arrives_whole_in_few_messages_and_in_order():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.test", channel)
    relay = GroupRelay("relay.test")
    for i in range(300):
        await relay.send({"type": "tool_update", "call_id": "c1", "text": f"{i},"})
    await relay.send({"type": "turn_finished", "stop_reason": "completed"})
    events = await _receive_until_finished(layer, channel)
    updates = [e for e in events if e["type"] == "tool_update"]
    assert "".join(e["text"] for e in updates) == "".join(f"{i}," for i in range(300))
    assert len(updates) < 300
    assert events[-1]["type"] == "turn_finished"


async def test_a_lone_update_goes_out_without_waiting_for_the_window():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.lone", channel)
    await GroupRelay("relay.lone").send({"type": "text_delta", "text": "hi"})
    message = await asyncio.wait_for(layer.receive(channel), timeout=5)
    assert message["event"] == {"type": "text_delta", "text": "hi"}


def test_coalescing_keeps_calls_apart_and_keeps_the_tail_of_long_output():
    events = [
        {"type": "tool_update", "call_id": "a", "text": "x" * 15_000},
        {"type": "tool_update", "call_id": "a", "text": "y" * 15_000},
        {"type": "tool_update", "call_id": "b", "text": "z"},
        {"type": "text_delta", "text": "t"},
    ]
    merged = coalesce_streamed(events)
    assert [(e["type"], e.get("call_id")) for e in merged] == [
        ("tool_update", "a"),
        ("tool_update", "b"),
        ("text_delta", None),
    ]
    assert len(merged[0]["text"]) == 20_000
    assert merged[0]["text"].endswith("y" * 15_000)
