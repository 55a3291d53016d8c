"""Relayed frames written at once (``daphne_patches.DirectTextFrames``) on a real daphne.

Frames of 200 KB are over Twisted's 128 KB per ``send`` limit, so each is written in part
at once and the rest through Twisted's buffer, behind which the next frames must queue:
every frame must still arrive whole and in order, mixed with frames sent through daphne's
own ASGI send. The browser-side client is the ``websockets`` library, which checks every
frame's header as RFC 6455 says.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import Iterator

import pytest
from autobahn.websocket.protocol import PreparedMessage
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from bench._ws import daphne_start
from chat_app.consumers import ChatConsumer
from core.socket_frames import FRAME_WRITER
from openprogram_site.daphne_patches import DirectTextFrames, FrameWriterInScope, _text_frame
from tests.servers import DaphneServer, make_server

APP = "tests.integration.site.frame_writer_app:application"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DaphneServer]:
    srv = make_server(tmp_path_factory.mktemp("frame-writer-home"))
    daphne_start(srv, app=APP)
    yield srv
    srv.stop()


async def _exchange(url: str, requests: list[dict]) -> list[list[dict]]:
    """Send each request and collect its answer: the frames up to its ``done`` frame."""
    answers = []
    async with connect(url, max_size=None) as ws:
        for request in requests:
            await ws.send(json.dumps(request))
            frames = []
            while not frames or "done" not in frames[-1]:
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 60)))
            answers.append(frames)
    return answers


def test_a_daphne_socket_gets_a_writer_that_waits_for_the_handshake(server):
    ((head, *_),) = asyncio.run(
        _exchange(f"ws://127.0.0.1:{server.port}/ws/frames/", [{"count": 1, "size": 1}])
    )
    assert head == {"writer": True, "declined_before_accept": True}


def test_frames_larger_than_one_send_arrive_whole_and_in_order_with_daphnes_own(server):
    requests = [{"count": 60, "size": 200_000}, {"count": 300, "size": 10}, {"count": 5, "size": 0}]
    answers = asyncio.run(_exchange(f"ws://127.0.0.1:{server.port}/ws/frames/", requests))
    for request, (head, *frames, done) in zip(requests, answers, strict=True):
        assert head["writer"] is True
        assert [frame["seq"] for frame in frames] == list(range(request["count"]))
        assert {len(frame["pad"]) for frame in frames} == {request["size"]}
        count = request["count"]
        # Every frame offered to the writer was written by it, partial sends included.
        assert done == {"done": count, "direct": count - count // 3, "oversize_declined": True}


def test_frame_sizes_at_each_length_encoding_arrive_whole(server):
    # 125/126 and 65535/65536 bytes of JSON are where the header's length field changes.
    overhead = len(json.dumps({"seq": 0, "pad": ""}))
    sizes = [125 - overhead, 126 - overhead, 65535 - overhead, 65536 - overhead]
    requests = [{"count": 3, "size": size} for size in sizes]
    answers = asyncio.run(_exchange(f"ws://127.0.0.1:{server.port}/ws/frames/", requests))
    for request, (_, *frames, _done) in zip(requests, answers, strict=True):
        assert [len(json.dumps(frame)) for frame in frames] == [request["size"] + overhead] * 3


def test_nothing_is_written_after_the_socket_is_closed(server):
    async def close_then_listen() -> tuple[list[str], int | None]:
        async with connect(f"ws://127.0.0.1:{server.port}/ws/frames/") as ws:
            await ws.send(json.dumps({"count": 3, "size": 1}))
            await ws.send(json.dumps({"close": 4401}))
            texts = []
            with contextlib.suppress(ConnectionClosed):
                while True:
                    texts.append(await asyncio.wait_for(ws.recv(), 30))
            return texts, ws.close_code

    texts, code = asyncio.run(close_then_listen())
    assert code == 4401  # a clean close: no frame after it broke the protocol (1002)
    assert "after close" not in texts and json.loads(texts[-1])["done"] == 3


def test_the_products_chat_sockets_sit_behind_the_frame_writer(server):
    async def probe() -> dict:
        async with connect(f"ws://127.0.0.1:{server.port}/ws/stack/") as ws:
            return json.loads(await asyncio.wait_for(ws.recv(), 30))

    assert asyncio.run(probe()) == {"behind_writer": True}


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70_000])
def test_a_frame_is_byte_for_byte_what_autobahn_would_send(size):
    payload = ("é" * size).encode()[:size]
    assert _text_frame(payload) == PreparedMessage(payload, False, False, True).payloadHybi


async def _record(sent: list, message: dict) -> None:
    sent.append(message)


def test_any_send_but_daphnes_gets_no_writer_and_its_scope_is_left_alone():
    sent: list = []
    assert DirectTextFrames.of(functools.partial(_record, sent)) is None
    assert DirectTextFrames.of(print) is None

    seen = []

    async def inner(scope, receive, send):
        seen.append(scope)

    scope = {"type": "websocket", "path": "/ws/chat/x/"}
    asyncio.run(FrameWriterInScope(inner)(scope, None, functools.partial(_record, sent)))
    assert seen == [scope] and FRAME_WRITER not in seen[0]


class _Writer:
    """Declines the frames it is told to, as a writer that finds the connection busy."""

    def __init__(self, declines: set[str]) -> None:
        self.declines = declines
        self.written: list[str] = []

    def write_text(self, text: str) -> bool:
        if text in self.declines:
            return False
        self.written.append(text)
        return True


def test_the_chat_consumer_sends_each_frame_its_writer_declines_through_the_asgi_send():
    frames = {"type": "chat.events", "frames": ["a", "b", "c"]}
    for writer, direct, through_send in [
        (None, [], ["a", "b", "c"]),
        (_Writer(declines={"b"}), ["a", "c"], ["b"]),
    ]:
        consumer = ChatConsumer()
        consumer.scope = {} if writer is None else {FRAME_WRITER: writer}
        sent: list = []
        consumer.base_send = functools.partial(_record, sent)
        asyncio.run(consumer.chat_events(frames))
        assert [message["text"] for message in sent] == through_send
        assert (writer.written if writer else []) == direct
