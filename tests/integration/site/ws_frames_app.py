"""Test-only ASGI app for ``test_ws_frames.py``: the product's app plus two test sockets.

- ``/ws/frames/``: a bare ASGI socket. For each ``{"count", "size"}`` request it says
  whether :class:`~openprogram_site.ws_frames.DirectFrames` took daphne's send, then
  writes ``count`` frames ``{"seq", "pad"}`` (two of every three through ``DirectFrames``,
  the third through daphne's own ASGI send, interleaved), then ``{"done": count,
  "oversize_declined": ...}``.
- ``/ws/frames-chat/``: the same middleware the chat socket sits behind (exact origin,
  session and user); it says whether ``DirectFrames`` takes the send a consumer there
  gets, unwrapped as ``chat_app.consumers`` does.
"""

# ruff: noqa: I001 (the product app first: it sets Django up before Django models load)
from __future__ import annotations

import json
from typing import Any

from openprogram_site.asgi import application as product_application

from channels.auth import AuthMiddlewareStack
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import URLRouter
from django.conf import settings
from django.urls import path

from chat_app.consumers import _socket_send
from openprogram_site.origins import ExactOriginValidator
from openprogram_site.ws_frames import DirectFrames

__all__ = ["application"]


async def _frames_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    direct = DirectFrames.of(send)
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        request = json.loads(message["text"])
        await send({"type": "websocket.send", "text": json.dumps({"direct": direct is not None})})
        pad = "x" * request["size"]
        for seq in range(request["count"]):
            text = json.dumps({"seq": seq, "pad": pad})
            if seq % 3 == 2 or direct is None or not direct.write_text(text):
                await send({"type": "websocket.send", "text": text})
        # Over daphne's 1 MB limit: DirectFrames leaves it to daphne's send (which refuses it).
        oversize = direct is not None and not direct.write_text("x" * (2 * 1024 * 1024))
        done = {"done": request["count"], "oversize_declined": oversize}
        await send({"type": "websocket.send", "text": json.dumps(done)})


class _ChatStackProbe(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.accept()
        direct = DirectFrames.of(_socket_send(self.base_send))
        await self.send(text_data=json.dumps({"direct": direct is not None}))


_chat_stack = ExactOriginValidator(
    AuthMiddlewareStack(URLRouter([path("ws/frames-chat/", _ChatStackProbe.as_asgi())])),
    settings.WEBSOCKET_ALLOWED_ORIGINS,
)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket" and scope.get("path") == "/ws/frames/":
        await _frames_socket(scope, receive, send)
    elif scope["type"] == "websocket" and scope.get("path") == "/ws/frames-chat/":
        await _chat_stack(scope, receive, send)
    else:
        await product_application(scope, receive, send)
