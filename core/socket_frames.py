"""What the chat consumer and the server's WebSocket layer share.

- The error frame and close code of a frame over the size limit: the chat consumer's own
  64 KB limit and daphne's 1 MB one (``openprogram_site.daphne_patches``), so a client
  sees the same frame and code from either.
- :data:`FRAME_WRITER`: where the server layer may put, in a socket's scope, a writer
  that sends a text frame at once (:class:`FrameWriter`). The chat consumer writes
  relayed frames through it, and through the ASGI ``send`` when it is absent (another
  server, TLS) or declines a frame.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["CLOSE_TOO_LARGE", "FRAME_WRITER", "FrameWriter", "too_large_frame"]

CLOSE_TOO_LARGE = 4413
"""A frame over the size limit (the consumer's 64 KB or daphne's 1 MB), as HTTP's 413."""


FRAME_WRITER = "openprogram.frame_writer"
"""The scope key of a socket's :class:`FrameWriter`, when the server layer provides one."""


class FrameWriter(Protocol):
    def write_text(self, text: str) -> bool:
        """Send ``text`` as one text frame, after everything sent before on the socket;
        False (nothing sent) when the caller must use the ASGI ``send`` instead."""
        ...


def too_large_frame(*, size: int, limit: int) -> dict[str, Any]:
    """The error frame sent before closing a socket that sent an oversize frame."""
    return {
        "type": "error",
        "kind": "too_large",
        "message": f"a frame of {size} bytes is over the {limit}-byte limit; "
        "the connection closes (code 4413)",
    }
