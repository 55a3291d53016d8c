"""Oversize WebSocket frames: an error frame, then close code 4413 — never a dropped TCP link.

Two limits apply. The application's (``chat_app.schemas.MAX_FRAME_BYTES``, 64 KB) is
checked by the consumer. daphne's own (``--websocket-max-message-size``, 1 MB by
default) is enforced inside autobahn before the application sees a byte: autobahn's
``_max_message_size_exceeded`` calls ``_fail_connection``, which for a server
*drops the TCP connection* (``failByDrop``), so the browser sees code 1006 and no
reason. :func:`oversize_frames_answered` replaces that hook on daphne's protocol class
so the client gets the same error frame the consumer sends, then a clean close
handshake with :data:`CLOSE_TOO_LARGE` (4413, as HTTP's 413: an ASGI application may
only close with 1000 or 3000-4999, so RFC 6455's 1009 is not available to the
consumer, and both limits answer alike). It runs when ``openprogram_site.asgi`` is
imported, which every way of serving the app (``make run``, the ``daphne`` command,
the tests' servers) does in the daphne process before it listens.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CLOSE_TOO_LARGE", "oversize_frames_answered", "too_large_frame"]

CLOSE_TOO_LARGE = 4413
"""A frame over the size limit (the consumer's 64 KB or daphne's 1 MB)."""


def too_large_frame(*, size: int, limit: int) -> dict[str, Any]:
    """The error frame sent before closing a socket that sent an oversize frame."""
    return {
        "type": "error",
        "kind": "too_large",
        "message": f"a frame of {size} bytes is over the {limit}-byte limit; "
        "the connection closes (code 4413)",
    }


def _answer_then_close(self: Any, msg_size: int, max_msg_size: int, reason: str) -> None:
    if self.state == self.STATE_OPEN and not self.failedByMe:
        frame = too_large_frame(size=msg_size, limit=max_msg_size)
        self.sendMessage(json.dumps(frame).encode(), isBinary=False)
    # A close handshake rather than autobahn's default abort of the TCP connection.
    self.failByDrop = False
    self._fail_connection(CLOSE_TOO_LARGE, "frame too large")


def oversize_frames_answered() -> None:
    """Make daphne answer frames over its size limit (idempotent; no-op without daphne)."""
    try:
        from daphne.ws_protocol import WebSocketProtocol
    except ImportError:  # served by another ASGI server: its own limits apply
        return
    WebSocketProtocol._max_message_size_exceeded = _answer_then_close
