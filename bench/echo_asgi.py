"""Bench-only ASGI app: the product's application plus a bare Channels echo at ``/ws/echo/``.

The concurrency bench runs daphne on ``bench.echo_asgi:application`` so the echo
consumer (the ceiling: no auth, no database, no turn) and the real chat socket share
one server process. The product's own routing is untouched.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from openprogram_site.asgi import application as product_application

__all__ = ["EchoConsumer", "application"]

ECHO_PATH = "/ws/echo/"


class EchoConsumer(AsyncWebsocketConsumer):
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.send(text_data=text_data, bytes_data=bytes_data)


_echo = EchoConsumer.as_asgi()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket" and scope.get("path") == ECHO_PATH:
        await _echo(scope, receive, send)
        return
    await product_application(scope, receive, send)
