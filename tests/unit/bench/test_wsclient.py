"""The benchmarks' minimal WebSocket client, against a real WebSocket server (websockets)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from bench._wsclient import ws_connect


async def _answer(socket: ServerConnection) -> None:
    """Echoes, and on request sends what a server may send: big, fragmented, binary, close."""
    async for message in socket:
        if message == "big":
            await socket.send("x" * 70_000)  # a 64-bit length
        elif message == "medium":
            await socket.send("y" * 300)  # a 16-bit length
        elif message == "fragments":
            await socket.send(["frag", "mented ", "é"])
        elif message == "binary":
            await socket.send(b"\x00\x01\xff")
        elif message == "ping":
            await socket.ping(b"are you there")
            await socket.send("pinged")
        elif message == "close":
            await socket.close(4001, "bye")
        else:
            await socket.send(f"echo {message} {socket.request.headers.get('Cookie')}")


@contextlib.asynccontextmanager
async def _server() -> AsyncIterator[str]:
    def refuse_strangers(connection: ServerConnection, request: Any) -> Any:
        if request.headers.get("Origin") != "http://allowed":
            return connection.respond(403, "wrong origin\n")
        return None

    async with serve(
        _answer, "127.0.0.1", 0, compression=None, process_request=refuse_strangers
    ) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws/x/"


async def _exchange(url: str, *sent: str, expect: int) -> tuple[list[Any], Any]:
    got: list[Any] = []
    arrived = asyncio.Event()

    def on_message(message: str | bytes, at_ns: int) -> None:
        assert at_ns > 0
        got.append(message)
        if len(got) == expect:
            arrived.set()

    socket = await ws_connect(
        url, on_message=on_message, headers={"Origin": "http://allowed", "Cookie": "s=1"}
    )
    for text in sent:
        socket.send_text(text)
    await asyncio.wait_for(arrived.wait(), 5)
    return got, socket


async def test_it_sends_text_with_the_given_headers_and_reads_the_reply():
    async with _server() as url:
        got, socket = await _exchange(url, "hello", "again", expect=2)
        await socket.close()
    assert got == ["echo hello s=1", "echo again s=1"]
    assert socket.close_code == 1000


async def test_it_reads_long_fragmented_and_binary_messages_whole():
    async with _server() as url:
        got, socket = await _exchange(url, "big", "medium", "fragments", "binary", expect=4)
        await socket.close()
    assert got == ["x" * 70_000, "y" * 300, "fragmented é", b"\x00\x01\xff"]


async def test_it_answers_a_ping_and_keeps_reading():
    async with _server() as url:
        got, socket = await _exchange(url, "ping", "after", expect=2)
        await socket.close()
    assert got == ["pinged", "echo after s=1"]


async def test_a_close_from_the_server_ends_the_connection_with_its_code():
    async with _server() as url:
        _, socket = await _exchange(url, "hi", expect=1)
        socket.send_text("close")
        await asyncio.wait_for(socket.closed, 5)
    assert socket.close_code == 4001


async def test_a_refused_handshake_raises_with_the_status():
    async with _server() as url:
        with pytest.raises(ConnectionError, match="403"):
            await ws_connect(url, on_message=lambda m, t: None, headers={"Origin": "http://evil"})


def test_a_client_frame_is_masked_as_the_protocol_requires():
    from bench._wsclient import _masked

    mask = b"\x01\x02\x03\x04"
    assert _masked(_masked(b"some payload", mask), mask) == b"some payload"
    assert _masked(b"\x00\x00\x00\x00\x00", mask) == b"\x01\x02\x03\x04\x01"
