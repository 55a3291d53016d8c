"""Test-only ASGI app for ``test_frame_writer.py``: the product's app plus a bare socket.

``/ws/frames/`` sits behind :class:`~openprogram_site.daphne_patches.FrameWriterInScope`
as the chat socket does. For each ``{"count", "size"}`` request it says whether its scope
holds a frame writer, then writes ``count`` frames ``{"seq", "pad"}`` (two of every three
through the writer, the third through daphne's own ASGI send, interleaved), then
``{"done": count, "direct": frames the writer took, "oversize_declined": ...}``.
A ``{"close": code}`` request closes the socket, then offers the writer one more frame,
which it must decline. ``/ws/stack/`` says whether the product's chat sockets sit behind the writer's middleware.
Anything else goes to the product's app.
"""

# ruff: noqa: I001 (the product app first: it sets Django up before Django models load)
from __future__ import annotations

import json
from typing import Any

from openprogram_site.asgi import application as product_application

from core.socket_frames import FRAME_WRITER
from openprogram_site.daphne_patches import FrameWriterInScope

__all__ = ["application"]

OVERSIZE = "x" * (2 * 1024 * 1024)
"""Over daphne's 1 MB frame limit: the writer must leave it to daphne's send."""


async def _frames_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()  # websocket.connect
    writer = scope.get(FRAME_WRITER)
    early = writer is not None and writer.write_text("before the handshake")
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        request = json.loads(message["text"])
        if "close" in request:  # as a socket whose login ended closes mid-turn
            await send({"type": "websocket.close", "code": request["close"]})
            if writer is not None and writer.write_text("after close"):
                raise AssertionError("the writer wrote a frame after the close frame")
            return
        head = {"writer": writer is not None, "declined_before_accept": not early}
        await send({"type": "websocket.send", "text": json.dumps(head)})
        pad = "x" * request["size"]
        direct = 0
        for seq in range(request["count"]):
            text = json.dumps({"seq": seq, "pad": pad})
            if seq % 3 != 2 and writer is not None and writer.write_text(text):
                direct += 1
            else:
                await send({"type": "websocket.send", "text": text})
        oversize = writer is not None and not writer.write_text(OVERSIZE)
        done = {"done": request["count"], "direct": direct, "oversize_declined": oversize}
        await send({"type": "websocket.send", "text": json.dumps(done)})


_frames = FrameWriterInScope(_frames_socket)


async def _stack_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    origin_check = product_application.application_mapping["websocket"]
    behind = isinstance(origin_check.application, FrameWriterInScope)
    await send({"type": "websocket.send", "text": json.dumps({"behind_writer": behind})})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket" and scope.get("path") == "/ws/frames/":
        await _frames(scope, receive, send)
    elif scope["type"] == "websocket" and scope.get("path") == "/ws/stack/":
        await _stack_socket(scope, receive, send)
    else:
        await product_application(scope, receive, send)
