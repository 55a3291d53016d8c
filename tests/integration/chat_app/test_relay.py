"""The relay merges bursts of streamed events, loses nothing and keeps the order."""

import asyncio
import itertools
import json
import time

import pytest
from channels.layers import get_channel_layer

from chat_app import relay as relay_module
from chat_app.relay import GroupRelay, coalesce_streamed, event_frame

WIDE_WINDOW = 0.5
"""The window the timing tests use instead of the real 20 ms: two sends a few statements
apart stay inside it however busy the machine is (a 20 ms one can close between them when
the process is descheduled), and the window logic is the same."""


@pytest.fixture
def wide_window(monkeypatch) -> float:
    monkeypatch.setattr(relay_module, "RELAY_WINDOW_SECONDS", WIDE_WINDOW)
    return WIDE_WINDOW


def _events(message: dict) -> list[dict]:
    """The events of one relayed message, from the frames every tab is sent as they are."""
    assert message["type"] == "chat.events"
    return [json.loads(frame) for frame in message["frames"]]


async def _receive_until_finished(layer, channel) -> list[dict]:
    events = []
    while True:
        message = await asyncio.wait_for(layer.receive(channel), timeout=60)
        events.extend(_events(message))
        if events[-1]["type"] == "turn_finished":
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
    message = await asyncio.wait_for(layer.receive(channel), timeout=60)
    assert _events(message) == [{"type": "text_delta", "text": "hi"}]


async def test_a_step_of_several_events_travels_as_one_message_in_order():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.step", channel)
    step = [
        {"type": "tool_call_started", "call_id": f"c{i}", "name": "todo_read"} for i in range(3)
    ]
    await GroupRelay("relay.step").send(*step)
    message = await asyncio.wait_for(layer.receive(channel), timeout=60)
    assert _events(message) == step


def test_coalescing_merges_only_streamed_events():
    events = [
        {"type": "model_call", "step": 1},
        {"type": "model_call", "step": 2},
        {"type": "text_delta", "text": "a"},
        {"type": "text_delta", "text": "b"},
    ]
    assert coalesce_streamed(events) == [
        {"type": "model_call", "step": 1},
        {"type": "model_call", "step": 2},
        {"type": "text_delta", "text": "ab"},
    ]


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


async def test_text_streamed_at_a_models_pace_shares_frames_and_waits_for_its_window(
    wide_window,
):
    """Pieces ~10 ms apart: those inside a window share a frame, sent when it closes."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.paced", channel)
    relay = GroupRelay("relay.paced")
    loop = asyncio.get_running_loop()
    sent_at: dict[int, float] = {}
    messages: list[tuple[float, list[int]]] = []  # (received at, the pieces it carried)

    async def receive_all() -> str:
        text = ""
        while len(text.split(",")) <= 30:
            message = await asyncio.wait_for(layer.receive(channel), timeout=60)
            pieces = []
            for event in _events(message):
                assert event["type"] == "text_delta"
                pieces += [int(piece) for piece in filter(None, event["text"].split(","))]
                text += event["text"]
            messages.append((loop.time(), pieces))
        return text

    receiver = asyncio.create_task(receive_all())
    for i in range(30):
        sent_at[i] = loop.time()
        await relay.send({"type": "text_delta", "text": f"{i},"})
        await asyncio.sleep(0.01)  # the model's pace, not a wait for a condition
    text = await receiver

    assert text == "".join(f"{i}," for i in range(30))
    # Frames shared: 30 pieces over 0.3 s or more in 0.5 s windows make 2 or 3 messages
    # (~12 on a machine 10x slower, each window still holding several pieces).
    assert len(messages) <= 20
    for (_, before), (received, pieces) in itertools.pairwise(messages):
        waited = pieces[:-1]  # the last one may have found the window closed and taken it
        if not waited:
            continue
        # The ones that waited were sent inside one window, which the message before
        # them opened; they went out no earlier than it closed.
        assert sent_at[waited[-1]] - sent_at[waited[0]] < wide_window
        assert received >= sent_at[before[-1]] + wide_window


class _Tabs:
    """Open tabs as Channels delivers to them: each a channel of the real layer, joined to
    a group, with a task receiving its messages into a list (a consumer's receive loop)."""

    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self._channels: list[str] = []
        self._tasks: list[asyncio.Task] = []

    async def open(self, group: str, count: int = 1) -> list[list[dict]]:
        tabs: list[list[dict]] = []
        for _ in range(count):
            got: list[dict] = []
            channel = await self.layer.new_channel()
            await self.layer.group_add(group, channel)
            self._channels.append(channel)
            self._tasks.append(asyncio.create_task(self._receive(channel, got)))
            tabs.append(got)
        await self.delivered()  # every receiver waits on its channel
        return tabs

    async def _receive(self, channel: str, got: list[dict]) -> None:
        while True:
            got.append(await self.layer.receive(channel))

    async def delivered(self) -> None:
        """Wait until every message sent to the tabs so far is in their lists."""
        async with asyncio.timeout(60):
            while any(self.layer.pending(c) for c in self._channels):
                await asyncio.sleep(0)
            await asyncio.sleep(0)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def tabs():
    opened = _Tabs()
    yield opened
    await opened.close()


async def test_a_step_is_json_encoded_once_for_every_tab(tabs, monkeypatch):
    first_tab, second_tab = await tabs.open("relay.once", 2)
    step = [{"type": "tool_call_started", "call_id": "c1", "name": "todo_read", "seq": 4}]
    encoded: list[dict] = []
    monkeypatch.setattr(
        relay_module, "event_frame", lambda event: encoded.append(event) or event_frame(event)
    )

    await GroupRelay("relay.once").send(*step)
    await tabs.delivered()

    assert encoded == step  # once, whatever the number of tabs
    assert first_tab[0]["frames"] == second_tab[0]["frames"]
    assert [json.loads(frame) for frame in first_tab[0]["frames"]] == step


async def test_the_first_piece_after_any_other_event_goes_out_at_once(wide_window, tabs):
    [tab] = await tabs.open("relay.first")
    relay = GroupRelay("relay.first")

    await relay.send({"type": "text_delta", "text": "a"})  # opens a window
    await relay.send({"type": "model_call", "step": 1})
    await relay.send({"type": "text_delta", "text": "b"})  # a new model call's first text
    await tabs.delivered()

    assert [_events(message) for message in tab] == [
        [{"type": "text_delta", "text": "a"}],
        [{"type": "model_call", "step": 1}],
        [{"type": "text_delta", "text": "b"}],
    ]


async def test_pieces_inside_the_window_wait_and_go_out_merged_when_it_closes(wide_window, tabs):
    [tab] = await tabs.open("relay.window")
    relay = GroupRelay("relay.window")

    for seq, piece in enumerate(("a", "b", "c"), start=1):
        await relay.send({"type": "text_delta", "text": piece, "seq": seq})
    await tabs.delivered()
    assert [_events(message) for message in tab] == [
        [{"type": "text_delta", "text": "a", "seq": 1}]
    ]

    async with asyncio.timeout(60):
        while len(tab) < 2:
            await asyncio.sleep(wide_window / 4)
    # One frame with the last piece's seq, listing its pieces for a tab that has some.
    assert _events(tab[1]) == [
        {"type": "text_delta", "text": "bc", "seq": 3, "parts": [[2, 1], [3, 1]]}
    ]


async def test_an_event_after_waiting_pieces_sends_them_first_in_order(wide_window, tabs):
    [tab] = await tabs.open("relay.order")
    relay = GroupRelay("relay.order")

    await relay.send({"type": "text_delta", "text": "a"})
    await relay.send({"type": "text_delta", "text": "b"})  # waits in the window
    await relay.send({"type": "turn_finished", "stop_reason": "completed"})
    await tabs.delivered()

    assert [_events(message) for message in tab] == [
        [{"type": "text_delta", "text": "a"}],
        [
            {"type": "text_delta", "text": "b"},
            {"type": "turn_finished", "stop_reason": "completed"},
        ],
    ]


def test_merged_frames_list_their_pieces_in_utf16_units_and_only_what_they_keep():
    events = [
        {"type": "text_delta", "text": "a😀", "seq": 4},
        {"type": "text_delta", "text": "bc", "seq": 5},
        {"type": "tool_update", "call_id": "x", "text": "x" * 15_000, "seq": 6},
        {"type": "tool_update", "call_id": "x", "text": "y" * 15_000, "seq": 7},
        {"type": "text_delta", "text": "lone", "seq": 8},
    ]
    text, output, lone = coalesce_streamed(events, parts=True)
    assert (text["seq"], text["text"], text["parts"]) == (5, "a😀bc", [[4, 3], [5, 2]])
    assert output["parts"] == [[6, 5_000], [7, 15_000]]  # the tail of 20,000 characters
    assert sum(length for _, length in output["parts"]) == len(output["text"])
    assert "parts" not in lone  # nothing merged, nothing to list
    assert all("parts" not in event for event in coalesce_streamed(events))  # history's


@pytest.mark.parametrize(
    "text", ["plain", 'quotes " and \\ backslashes', "tab\tnew line\n\x00\x1f", "é 😀 中文", ""]
)
def test_a_text_delta_frame_is_exactly_its_event_as_json(text):
    event = {"type": "text_delta", "text": text, "seq": 7, "run_id": 3}
    assert json.loads(event_frame(event)) == event


def test_frames_of_other_shapes_are_their_events_as_json():
    events = [
        {"type": "text_delta", "text": "ab", "seq": 2, "run_id": 3, "parts": [[1, 1], [2, 1]]},
        {"type": "text_delta", "text": "no seq"},
        {"type": "tool_update", "call_id": "c1", "text": "x", "seq": 4, "run_id": 3},
        {"type": "turn_finished", "stop_reason": "completed", "usage": {"total_tokens": 5}},
    ]
    assert [json.loads(event_frame(event)) for event in events] == events


async def test_windows_of_many_turns_closing_together_each_send_their_own_pieces(wide_window, tabs):
    """Windows opened in one turn of the loop share a timer; each sends what it holds."""
    groups = [f"relay.many.{i}" for i in range(20)]
    opened = [(await tabs.open(group))[0] for group in groups]
    relays = [GroupRelay(group) for group in groups]

    for i, relay in enumerate(relays):
        await relay.send({"type": "text_delta", "text": f"{i}a", "seq": 1})
    for i, relay in enumerate(relays):
        await relay.send({"type": "text_delta", "text": f"{i}b", "seq": 2})  # wait
        await relay.send({"type": "text_delta", "text": f"{i}c", "seq": 3})
    await tabs.delivered()
    assert all(len(tab) == 1 for tab in opened)

    async with asyncio.timeout(60):
        while any(len(tab) < 2 for tab in opened):
            await asyncio.sleep(wide_window / 4)
    for i, tab in enumerate(opened):
        assert [_events(message) for message in tab] == [
            [{"type": "text_delta", "text": f"{i}a", "seq": 1}],
            [
                {
                    "type": "text_delta",
                    "text": f"{i}b{i}c",
                    "seq": 3,
                    "parts": [[2, len(f"{i}b")], [3, len(f"{i}c")]],
                }
            ],
        ]


async def test_a_window_closed_early_by_another_event_is_not_closed_again_by_its_timer(
    monkeypatch, tabs
):
    [tab] = await tabs.open("relay.reopened")
    relay = GroupRelay("relay.reopened")
    loop = asyncio.get_running_loop()

    monkeypatch.setattr(relay_module, "RELAY_WINDOW_SECONDS", 0.05)
    await relay.send({"type": "text_delta", "text": "a", "seq": 1})
    first_closes_at = relay._window_until
    await relay.send({"type": "text_delta", "text": "b", "seq": 2})  # waits: a timer is set
    await relay.send({"type": "model_call", "step": 1, "seq": 3})  # sends it, window closed
    monkeypatch.setattr(relay_module, "RELAY_WINDOW_SECONDS", 600.0)
    await relay.send({"type": "text_delta", "text": "c", "seq": 4})  # opens a long window
    await relay.send({"type": "text_delta", "text": "d", "seq": 5})  # waits in it
    after_first_timer = loop.create_future()  # timers go off in time order
    loop.call_at(first_closes_at + 0.01, after_first_timer.set_result, None)
    await asyncio.wait_for(after_first_timer, timeout=60)
    await tabs.delivered()

    assert len(tab) == 3  # "d" still waits: the first window's timer left the second alone
    await relay.send({"type": "turn_finished", "stop_reason": "completed", "seq": 6})
    await tabs.delivered()
    assert [_events(message) for message in tab][3:] == [
        [
            {"type": "text_delta", "text": "d", "seq": 5},
            {"type": "turn_finished", "stop_reason": "completed", "seq": 6},
        ]
    ]


class _LayerThatWaits:
    """The single-process layer behind sends that wait, as Redis's do."""

    def __init__(self, layer) -> None:
        self.layer = layer

    async def group_send(self, group: str, message: dict) -> None:
        await asyncio.sleep(0)
        await self.layer.group_send(group, message)


async def test_with_the_single_process_layer_a_window_closes_in_its_timers_callback(wide_window):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.now", channel)
    relay = GroupRelay("relay.now")
    await relay.send({"type": "text_delta", "text": "a", "seq": 1})  # out at once
    await relay.send({"type": "text_delta", "text": "b", "seq": 2})  # waits for the timer
    assert layer.pending(channel) == 1

    relay.close_window(relay._timer)  # what the shared timer calls when the window ends

    assert layer.pending(channel) == 2  # sent in the callback: no task, no turn of the loop
    assert relay._flushing is None
    assert relay._window_until > 0  # the next piece waits for the next window
    await layer.receive(channel)
    assert _events(await layer.receive(channel)) == [{"type": "text_delta", "text": "b", "seq": 2}]


async def test_an_event_sent_while_a_windows_send_task_is_pending_goes_out_after_its_pieces(
    wide_window, tabs, monkeypatch
):
    """With a layer whose sends wait (Redis), a window closes in a task its timer starts;
    an event that arrives before that task ran sends the window's pieces first, and the
    task then finds nothing left."""
    [tab] = await tabs.open("relay.pending")
    monkeypatch.setattr(relay_module, "get_channel_layer", lambda: _LayerThatWaits(tabs.layer))
    relay = GroupRelay("relay.pending")
    await relay.send({"type": "text_delta", "text": "a", "seq": 1})
    await relay.send({"type": "text_delta", "text": "b", "seq": 2})  # waits in the window
    async with asyncio.timeout(60):
        while relay._flushing is None:  # the timer went off and started the window's task
            await asyncio.sleep(0)
    await relay.send({"type": "turn_finished", "stop_reason": "completed", "seq": 3})
    await asyncio.wait_for(relay._flushing, timeout=60)
    await tabs.delivered()

    events = [event for message in tab for event in _events(message)]
    assert events == [
        {"type": "text_delta", "text": "a", "seq": 1},
        {"type": "text_delta", "text": "b", "seq": 2},
        {"type": "turn_finished", "stop_reason": "completed", "seq": 3},
    ]


async def test_a_piece_in_the_last_millisecond_of_its_window_goes_out_at_once(monkeypatch, tabs):
    """A window may close up to a millisecond early, so a piece arriving then does not
    wait alone for a timer."""
    [tab] = await tabs.open("relay.last")
    relay = GroupRelay("relay.last")
    monkeypatch.setattr(relay_module, "RELAY_WINDOW_SECONDS", relay_module._SHARED_TIMER_SECONDS)
    await relay.send({"type": "text_delta", "text": "a", "seq": 1})
    assert relay._window_until > 0  # a window is open, for at most the last millisecond
    await relay.send({"type": "text_delta", "text": "b", "seq": 2})
    await tabs.delivered()

    assert [_events(message) for message in tab] == [
        [{"type": "text_delta", "text": "a", "seq": 1}],
        [{"type": "text_delta", "text": "b", "seq": 2}],
    ]
    assert relay._timer is None


async def test_a_window_whose_timer_fired_late_reopens_at_twenty_milliseconds():
    """A loop that runs late does not widen the windows: that cost more latency than the
    frames it saved (docs/decisions/relay-delivery.md)."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("relay.late", channel)
    relay = GroupRelay("relay.late")
    loop = asyncio.get_running_loop()
    for _ in range(3):
        await relay.send({"type": "text_delta", "text": "a"})  # goes out, opens the window
        await relay.send({"type": "text_delta", "text": "b"})  # waits for the window's timer
        time.sleep(0.2)  # the timer comes due while the loop cannot run it
        got = []
        while "".join(got) != "ab":
            message = await asyncio.wait_for(layer.receive(channel), timeout=60)
            got.extend(event["text"] for event in _events(message))
        # "b" went out from the late timer, which reopened the window from now
        left = relay._window_until - loop.time()
        assert 0 < left <= relay_module.RELAY_WINDOW_SECONDS
        await asyncio.sleep(left)  # the reopened window closes unused
