"""A turn's model stream as its events' reader sees it, on both transports, over real HTTP.

``process_user_turn`` reads the default model's stream in the task that consumes the
turn's events (one task wakes per streamed piece, not two): pieces keep their order
whatever the network made of them, nothing is lost while the reader is busy, and the
turn around the stream (errors, Stop, closing early) behaves as it always did.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import (
    ModelCallFinished,
    TextDelta,
    ToolsResolved,
    TurnError,
    TurnFinished,
    TurnRequest,
)
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY, TURN_TIMEOUT, of_type
from tests.component.agent.http_doubles import _Party
from tests.fakes.openai_server import FakeReply

_WORDS = " ".join(f"w{number}" for number in range(120))


@pytest.fixture(params=["openprogram", "litellm"])
def transport(request, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", request.param)
    return request.param


def _sse(*texts: str, finish: str | None = "stop") -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": {"content": text}}]} for text in texts]
    if finish is not None:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    body = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if finish is not None else b"")


class _SlicingServer(_Party):
    """Answers every call with ``body`` as an SSE stream written ``slice_size`` bytes at a
    time, each slice flushed on its own (0: the whole body in one write)."""

    def __init__(self, body: bytes, slice_size: int = 0) -> None:
        self.body = body
        self.slice_size = slice_size
        super().__init__()

    def answer(self, request: tuple[str, dict[str, str], bytes], out: Any) -> None:
        out.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        )
        out.flush()
        size = self.slice_size or len(self.body)
        for start in range(0, len(self.body), size):
            out.write(self.body[start : start + size])
            out.flush()
            if self.slice_size:
                time.sleep(0.002)  # lets the client see the slices as separate reads


async def _turn(request: TurnRequest) -> list:
    async def collect() -> list:
        return [event async for event in process_user_turn(request, retry=FAST_RETRY)]

    return await asyncio.wait_for(collect(), TURN_TIMEOUT)


def _served_by(server: _Party, monkeypatch) -> TurnRequest:
    monkeypatch.setenv("OPENPROGRAM_API_BASE", server.address + "/v1")
    monkeypatch.setenv("OPENPROGRAM_API_KEY", "k")
    return TurnRequest(text="go", model=FAKE_MODEL, tools_on=False)


async def test_many_events_in_one_network_read_reach_the_turn_whole_and_in_order(
    transport, monkeypatch
):
    words = _WORDS.split(" ")
    with _SlicingServer(_sse(*(f"{word} " for word in words))) as server:
        events = await _turn(_served_by(server, monkeypatch))

    assert [type(event) for event in (events[0], events[-2], events[-1])] == [
        ToolsResolved,
        ModelCallFinished,
        TurnFinished,
    ]
    text = "".join(delta.text for delta in of_type(events, TextDelta))
    assert text.split() == words
    assert (events[-1].stop_reason, events[-1].text) == ("completed", text)


async def test_events_cut_across_network_reads_reach_the_turn_whole(transport, monkeypatch):
    words = _WORDS.split(" ")[:40]
    with _SlicingServer(_sse(*(f"{word} " for word in words)), slice_size=7) as server:
        events = await _turn(_served_by(server, monkeypatch))

    assert "".join(delta.text for delta in of_type(events, TextDelta)).split() == words
    assert events[-1].stop_reason == "completed"


async def test_a_malformed_chunk_ends_the_turn_with_a_clear_error_after_the_text_before_it(
    transport, monkeypatch
):
    body = _sse("fine so far", finish=None) + b"data: {not json\n\n"
    with _SlicingServer(body) as server:
        events = await _turn(_served_by(server, monkeypatch))

    assert "".join(delta.text for delta in of_type(events, TextDelta)) == "fine so far"
    [error] = of_type(events, TurnError)
    # Our own client says it in words; end to end through litellm the message is litellm's
    # (its JSON decoder's), since the middle path that parsed under litellm is gone.
    said = "not JSON" if transport == "openprogram" else "Expecting property name"
    assert error.kind == "provider_unavailable" and said in error.message
    assert events[-1].stop_reason == "error"


async def test_pieces_that_came_while_the_reader_was_busy_come_out_joined_and_in_order(
    fake_openai, transport
):
    fake_openai.script(FakeReply(text=_WORDS, hang=True))  # 5-character pieces, then held
    pieces = -(-len(_WORDS) // 5)
    stream = process_user_turn(
        TurnRequest(text="go", model=FAKE_MODEL, tools_on=False), retry=FAST_RETRY
    )
    events = []
    async for event in stream:
        events.append(event)
        if isinstance(event, TextDelta):
            break
    # Busy with the first piece until the server has sent every one, then let it finish.
    assert await asyncio.to_thread(fake_openai.holding.wait, TURN_TIMEOUT)
    fake_openai.release()
    events += await asyncio.wait_for(_drain(stream), TURN_TIMEOUT)

    deltas = [event.text for event in of_type(events, TextDelta)]
    assert "".join(deltas) == _WORDS
    assert len(deltas) <= 10 < pieces  # what queued came out in a few joined pieces
    assert events[-1].stop_reason == "completed"


async def _drain(stream) -> list:
    return [event async for event in stream]


async def test_a_reader_busy_past_the_read_timeout_loses_nothing(
    fake_openai, transport, monkeypatch
):
    # The inactivity timeout watches the server, not the reader: the rest of the reply
    # waits in the buffer while the reader is busy for longer than the watchdog's longest
    # wait (two timeouts).
    monkeypatch.setenv("OPENPROGRAM_PROVIDER_TIMEOUT", "1")
    fake_openai.script(FakeReply(text=_WORDS, hang=True))
    stream = process_user_turn(
        TurnRequest(text="go", model=FAKE_MODEL, tools_on=False), retry=FAST_RETRY
    )
    events = []
    async for event in stream:
        events.append(event)
        if isinstance(event, TextDelta) and len(of_type(events, TextDelta)) == 1:
            assert await asyncio.to_thread(fake_openai.holding.wait, TURN_TIMEOUT)
            fake_openai.release()  # the rest of the reply comes while the reader is busy
            await asyncio.sleep(2.5)  # the busy reader, not a wait for a condition

    assert "".join(delta.text for delta in of_type(events, TextDelta)) == _WORDS
    assert not of_type(events, TurnError)
    assert events[-1].stop_reason == "completed"


async def test_stop_ends_a_held_stream_at_once_and_closing_early_ends_the_turn(
    fake_openai, transport
):
    fake_openai.script(FakeReply(text="held here", hang=True))
    request = TurnRequest(text="go", model=FAKE_MODEL, tools_on=False)
    events = []

    async def drive() -> None:
        async for event in process_user_turn(request, retry=FAST_RETRY):
            events.append(event)
            if "".join(delta.text for delta in of_type(events, TextDelta)) == "held here":
                request.cancel.set()

    await asyncio.wait_for(drive(), TURN_TIMEOUT)
    assert (events[-1].stop_reason, events[-1].text) == ("stopped", "held here")

    fake_openai.release()
    fake_openai.reset()
    fake_openai.script(FakeReply(text="held again", hang=True))
    second = TurnRequest(text="go", model=FAKE_MODEL, tools_on=False)
    stream = process_user_turn(second, retry=FAST_RETRY)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await asyncio.wait_for(stream.aclose(), TURN_TIMEOUT)
    fake_openai.release()

    assert second.cancel.is_set()
