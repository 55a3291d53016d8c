"""Relayed frames written by ``openprogram_site.ws_frames.DirectFrames`` on a real daphne.

Frames of 200 KB are over Twisted's 128 KB per ``send`` limit, so every one is written in
part at once and the rest through Twisted's buffer, behind which the next frames must
queue: every frame must still arrive, whole and in order, mixed with frames sent through
daphne's own ASGI send.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect

from bench._ws import daphne_start
from tests.servers import DaphneServer, make_server

APP = "tests.integration.site.ws_frames_app:application"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DaphneServer]:
    srv = make_server(tmp_path_factory.mktemp("ws-frames-home"))
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


def test_daphne_sockets_get_their_frames_written_directly(server):
    ((first, *_),) = asyncio.run(
        _exchange(f"ws://127.0.0.1:{server.port}/ws/frames/", [{"count": 1, "size": 1}])
    )
    assert first == {"direct": True}


def test_frames_larger_than_one_send_arrive_whole_and_in_order_with_daphnes_own(server):
    requests = [{"count": 60, "size": 200_000}, {"count": 300, "size": 10}]
    answers = asyncio.run(_exchange(f"ws://127.0.0.1:{server.port}/ws/frames/", requests))
    for request, (head, *frames, done) in zip(requests, answers, strict=True):
        assert head == {"direct": True}
        assert [frame["seq"] for frame in frames] == list(range(request["count"]))
        assert {len(frame["pad"]) for frame in frames} == {request["size"]}
        assert done == {"done": request["count"], "oversize_declined": True}


def test_the_chat_sockets_middleware_still_lets_frames_be_written_directly(server):
    async def probe() -> dict:
        url = f"ws://127.0.0.1:{server.port}/ws/frames-chat/"
        async with connect(url, origin=server.url) as ws:
            return json.loads(await asyncio.wait_for(ws.recv(), 30))

    assert asyncio.run(probe()) == {"direct": True}
