"""A minimal WebSocket client (RFC 6455) for the load benchmarks: a callback per message.

The ``websockets`` library costs ~40 µs of CPU per received message (frame parsing in
Python, an assembler, a queue, a coroutine wake-up per ``recv``): at 100 streaming chats,
a fifth of a core the benchmark takes from the server it times, on a 2-core machine.
Here an ``asyncio.Protocol`` splits the received bytes into messages and hands each one,
with its arrival time, to a callback, in the same event-loop callback that read them:
no task wakes up per message. It speaks what the benchmarks need: text and binary
messages (fragmented or not), ping/pong, the closing handshake; no extensions (no
compression is offered, so the server sends none).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
import time
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["WebSocketClosed", "WebSocketConnection", "ws_connect"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x1, 0x2, 0x8, 0x9, 0xA

OnMessage = Callable[[str | bytes, int], None]
"""Called with each message (text as str) and ``time.time_ns()`` when its last bytes came."""


class WebSocketClosed(ConnectionError):
    """The connection closed (``code`` from the peer's close frame, 1006 if none came)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"WebSocket closed (code {code})")
        self.code = code


class WebSocketConnection(asyncio.Protocol):
    """One client connection; messages go to ``on_message`` as they arrive."""

    def __init__(self, on_message: OnMessage, handshake: bytes, key: bytes) -> None:
        self.on_message = on_message
        self._request, self._key = handshake, key
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_opcode = 0
        self._transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.close_code: int | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.write(self._request)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self.opened.done():
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self._buffer[:end]).decode("latin-1")
            del self._buffer[: end + 4]
            error = _handshake_error(head, self._key)
            if error:
                self.opened.set_exception(ConnectionError(error))
                self._abort(1006)
                return
            self.opened.set_result(None)
        self._read_frames(time.time_ns())

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionError("closed during the handshake"))
        if self.close_code is None:
            self.close_code = 1006
        if not self.closed.done():
            self.closed.set_result(None)

    # frames

    def _read_frames(self, arrived_ns: int) -> None:
        buffer = self._buffer
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            length, at = second & 0x7F, 2
            if length == 126:
                if len(buffer) < 4:
                    return
                length, at = struct.unpack_from("!H", buffer, 2)[0], 4
            elif length == 127:
                if len(buffer) < 10:
                    return
                length, at = struct.unpack_from("!Q", buffer, 2)[0], 10
            mask = b""
            if second & 0x80:  # servers must not mask, but a masked frame still decodes
                mask, at = bytes(buffer[at : at + 4]), at + 4
            if len(buffer) < at + length:
                return
            payload = bytes(buffer[at : at + length])
            del buffer[: at + length]
            if mask:
                payload = _masked(payload, mask)
            self._frame(first & 0x80, first & 0x0F, payload, arrived_ns)

    def _frame(self, fin: int, opcode: int, payload: bytes, arrived_ns: int) -> None:
        if opcode == _PING:
            self._send(_PONG, payload)
        elif opcode == _CLOSE:
            self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
            self._send(_CLOSE, payload[:2])
            self._abort(self.close_code)
        elif opcode in (_TEXT, _BINARY, 0):
            if opcode:
                self._fragment_opcode = opcode
            if not fin:
                self._fragments.append(payload)
                return
            if self._fragments:
                payload = b"".join([*self._fragments, payload])
                self._fragments.clear()
            message = payload.decode() if self._fragment_opcode == _TEXT else payload
            self.on_message(message, arrived_ns)

    def _send(self, opcode: int, payload: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        length = len(payload)
        if length < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        mask = os.urandom(4)
        self._transport.write(head + mask + _masked(payload, mask))

    def _abort(self, code: int) -> None:
        if self.close_code is None:
            self.close_code = code
        if self._transport is not None:
            self._transport.close()

    # the caller's side

    def send_text(self, text: str) -> None:
        if self.closed.done():
            raise WebSocketClosed(self.close_code or 1006)
        self._send(_TEXT, text.encode())

    async def close(self, code: int = 1000) -> None:
        """Send a close frame and wait (briefly) for the connection to end."""
        if not self.closed.done():
            self._send(_CLOSE, struct.pack("!H", code))
            try:
                await asyncio.wait_for(asyncio.shield(self.closed), 5.0)
            except TimeoutError:
                self._abort(1006)


def _masked(payload: bytes, mask: bytes) -> bytes:
    if not payload:
        return payload
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    size = len(payload)
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(size, "big")


def _handshake_error(head: str, key: bytes) -> str:
    status, *lines = head.split("\r\n")
    if status.split(" ", 2)[1:2] != ["101"]:
        return f"the server refused the WebSocket: {status!r}"
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest()).decode()
    if headers.get("sec-websocket-accept") != accept:
        return "the server's Sec-WebSocket-Accept does not match the key"
    return ""


async def ws_connect(
    url: str, *, on_message: OnMessage, headers: dict[str, str] | None = None
) -> WebSocketConnection:
    """Open ``url`` (``ws://host:port/path``), sending ``headers`` with the handshake."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    key = base64.b64encode(os.urandom(16))
    lines = [
        f"GET {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1",
        f"Host: {parts.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key.decode()}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    handshake = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    loop = asyncio.get_running_loop()
    _, connection = await loop.create_connection(
        lambda: WebSocketConnection(on_message, handshake, key), host, port
    )
    await connection.opened
    return connection
