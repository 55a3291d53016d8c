"""The WebSocket Origin check: scheme, host and port must all match an allowed origin.

Cookies ignore ports, so a page on any other port of the same host (a dev server on
``http://localhost:3000``, anything on ``http://127.0.0.1:9999``) sends the user's
session cookie with a socket it opens to us. Channels' ``AllowedHostsOriginValidator``
compares host names only, which lets that page in; this validator compares the whole
origin, exactly, against ``settings.WEBSOCKET_ALLOWED_ORIGINS`` (derived from the same
values as ``CSRF_TRUSTED_ORIGINS``, see ``settings.py``).

A refused handshake is accepted and closed at once with :data:`CLOSE_FOREIGN_ORIGIN`
before the session is even read: the page learns the documented code and nothing else
(no frame, no conversation, no turn). A handshake without an Origin header is refused
the same way; browsers always send one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CLOSE_FOREIGN_ORIGIN", "ExactOriginValidator", "origin_key"]

_log = logging.getLogger(__name__)

CLOSE_FOREIGN_ORIGIN = 4403
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}

OriginKey = tuple[str, str, int]


def origin_key(origin: str) -> OriginKey | None:
    """``(scheme, host, port)`` of an origin, default ports filled in; None if malformed.

    Hosts compare case-insensitively; IPv6 literals keep no brackets (``[::1]`` → ``::1``).
    Anything beyond scheme://host[:port] (a path, credentials, a query) is malformed:
    a browser's Origin header never carries those.
    """
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.username or parts.password or parts.query or parts.fragment:
        return None
    if parts.path not in ("", "/"):
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


class ExactOriginValidator:
    """ASGI middleware for websocket scopes: pass only an exactly allowed Origin."""

    def __init__(self, application: Any, allowed_origins: Iterable[str]) -> None:
        self.application = application
        self.allowed: frozenset[OriginKey] = frozenset(
            key for key in map(origin_key, allowed_origins) if key is not None
        )

    def allows(self, origin: str | None) -> bool:
        key = origin_key(origin) if origin else None
        return key is not None and key in self.allowed

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            raise ValueError("ExactOriginValidator only guards websocket connections")
        origin = _header(scope, b"origin")
        if self.allows(origin):
            await self.application(scope, receive, send)
            return
        _log.warning("refused a socket to %s from origin %r", scope.get("path"), origin)
        await _refuse(receive, send)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            try:
                return value.decode("latin1")
            except UnicodeDecodeError:
                return None
    return None


async def _refuse(receive: Any, send: Any) -> None:
    """Accept and close with the documented code; read nothing else the client sends."""
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": CLOSE_FOREIGN_ORIGIN})
