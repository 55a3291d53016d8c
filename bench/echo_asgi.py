"""Bench-only ASGI app: the product's application plus two bare Channels consumers.

The concurrency bench runs daphne on ``bench.echo_asgi:application`` so the echo
consumer at ``/ws/echo/`` (the ceiling: no auth, no database, no turn) and the real chat
socket share one server process. ``/ws/first-piece/`` is the streaming load's floor
(``bench_burst_floor``): each message it receives becomes one streaming POST to the
model at ``OPENPROGRAM_API_BASE`` (aiohttp, a pooled connector as the product's), and
the first text piece goes back as a ``text_delta`` frame: a chat turn's path to its
first token with none of the turn's own work. The product's own routing is untouched.
"""

from __future__ import annotations

import json
import os
from typing import Any

import aiohttp
from channels.generic.websocket import AsyncWebsocketConsumer

from openprogram_site.asgi import application as product_application

__all__ = ["EchoConsumer", "FirstPieceConsumer", "application"]

ECHO_PATH = "/ws/echo/"
FIRST_PIECE_PATH = "/ws/first-piece/"


class EchoConsumer(AsyncWebsocketConsumer):
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.send(text_data=text_data, bytes_data=bytes_data)


class FirstPieceConsumer(AsyncWebsocketConsumer):
    """Forwards each message as a model call and sends back its first text piece."""

    _session: aiohttp.ClientSession | None = None
    _body: bytes = b""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        from bench.bench_burst_floor import first_piece_text, request_body

        if FirstPieceConsumer._session is None:
            FirstPieceConsumer._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0)
            )
            FirstPieceConsumer._body = request_body()
        url = os.environ["OPENPROGRAM_API_BASE"] + "/chat/completions"
        text = await first_piece_text(FirstPieceConsumer._session, url, FirstPieceConsumer._body)
        await self.send(text_data=json.dumps({"type": "text_delta", "text": text}))


_echo = EchoConsumer.as_asgi()
_first_piece = FirstPieceConsumer.as_asgi()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket" and scope.get("path") == ECHO_PATH:
        await _echo(scope, receive, send)
        return
    if scope["type"] == "websocket" and scope.get("path") == FIRST_PIECE_PATH:
        await _first_piece(scope, receive, send)
        return
    await product_application(scope, receive, send)
